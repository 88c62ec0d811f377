"""Each replica's loss share under tf.distribute (rules/replica_loss): a
mean the step computes itself is divided by the replicas for the gradient;
a Keras 3 Loss object's value, which Keras already divides under a
strategy, is not; a loss adding both kinds is warned about, never divided
as one. Followed through names, including augmented assignments."""
from __future__ import annotations

import pytest

from tfdist.api import convert_source

STEP = '''\
import tensorflow as tf
import keras

model = keras.Sequential([keras.Input(shape=(3,)), keras.layers.Dense(1)])
opt = keras.optimizers.SGD(0.1)
loss_fn = keras.losses.MeanSquaredError()
ds = tf.data.Dataset.from_tensor_slices((tf.zeros((64, 3)), tf.zeros((64, 1)))).batch(8)


@tf.function
def train_step(x, y):
    with tf.GradientTape() as tape:
        pred = model(x, training=True)
        {body}
    grads = tape.gradient(loss, model.trainable_weights)
    opt.apply_gradients(zip(grads, model.trainable_weights))
    return loss


for x, y in ds:
    train_step(x, y)
'''

DIVIDED = "scaled_loss = loss / strategy.num_replicas_in_sync"
KEPT = "scaled_loss = loss\n"
MIXED = "computes with a Keras loss object's value"

CASES = {
    "a Keras Loss object": ("loss = loss_fn(y, pred)", KEPT),
    "a mean of its own": ("loss = tf.reduce_mean(tf.square(y - pred))", DIVIDED),
    "a mean plus the model's regularisation losses": (
        "loss = tf.reduce_mean(tf.square(y - pred))\n        loss += sum(model.losses)", DIVIDED),
    # the Keras part is divided by Keras already, the sum is not: dividing the
    # whole would halve the first; only the added term is divided
    "a Keras Loss object plus the model's regularisation losses": (
        "loss = loss_fn(y, pred)\n        loss += sum(model.losses)",
        "loss += sum(model.losses) / strategy.num_replicas_in_sync\n"),
    "a Keras Loss object plus a weighted mean of its own, in one expression": (
        "loss = loss_fn(y, pred) + 0.1 * tf.reduce_mean(tf.abs(pred))",
        "loss = loss_fn(y, pred) + 0.1 * tf.reduce_mean(tf.abs(pred)) / strategy.num_replicas_in_sync"),
    # a Keras loss weighted by a tensor is still divided by Keras
    "a Keras Loss object weighted by a tensor": ("loss = loss_fn(y, pred) * tf.reduce_mean(y)", KEPT),
    # two Keras values multiplied are no share of anything: warned, never guessed
    "a product of Keras Loss values plus regularisation": (
        "loss = loss_fn(y, pred) * loss_fn(y, 2 * pred) + sum(model.losses)", MIXED),
    "a Keras Loss object scaled in place": ("loss = loss_fn(y, pred)\n        loss *= 2.0", KEPT),
    "two Keras Loss values added in place": ("loss = loss_fn(y, pred)\n        loss += loss_fn(y, 2 * pred)", KEPT),
    # a function or lambda of the module is followed into what it returns: the
    # Loss object's value inside it is divided by Keras already (dividing the
    # whole again trained with gradients N times too small, exit 0)
    "a Keras Loss object returned by a helper function": ("loss = helper_loss(y, pred)", KEPT),
    "a Keras Loss object returned by a lambda": ("loss = lambda_loss(y, pred)", KEPT),
    "a mean returned by a helper function": ("loss = helper_mean(y, pred)", DIVIDED),
    # tf.nn.compute_average_loss divides by the global batch under a strategy by itself
    "tf.nn.compute_average_loss": (
        "loss = tf.nn.compute_average_loss(tf.reduce_sum(tf.square(y - pred), axis=-1))", KEPT),
    # ... unless given the original's batch size: a mean over the replica's batch
    "tf.nn.compute_average_loss with global_batch_size": (
        "loss = tf.nn.compute_average_loss(tf.reduce_sum(tf.square(y - pred), axis=-1), global_batch_size=8)",
        DIVIDED),
    # Keras's own compiled loss of the model (Keras 3 and tf-keras divide it)
    "the model's compute_loss": ("loss = model.compute_loss(x=x, y=y, y_pred=pred)", KEPT),
    # a mean of a value Keras divided is not that value's share: warned
    "a mean of a Keras Loss value": ("loss = tf.reduce_mean(loss_fn(y, pred))", MIXED),
}
HELPERS = '''

def helper_loss(labels, predictions):
    return loss_fn(labels, predictions)


def helper_mean(labels, predictions):
    return tf.reduce_mean(tf.abs(labels - predictions))


lambda_loss = lambda labels, predictions: loss_fn(labels, predictions)
'''


@pytest.mark.parametrize("body, expected", CASES.values(), ids=list(CASES))
def test_loss_share(body, expected):
    source = STEP.replace("{body}", body).replace("\n\n@tf.function", HELPERS + "\n\n@tf.function")
    result = convert_source(source.encode(), "train.py", backend="tf-distribute")
    assert result.status == "converted", result.error
    warnings = [w.message for w in result.warnings if w.level == "WARNING"]
    text = result.data.decode()
    if expected == MIXED:
        assert len(warnings) == 1 and MIXED in warnings[0], warnings
        assert "scaled_loss" not in text
    else:
        assert not warnings, warnings
        assert expected in text, text
        if "strategy.num_replicas_in_sync\n" in expected and expected.startswith("loss +="):
            assert KEPT in text, text  # the sum is this replica's share, as a Keras loss alone
