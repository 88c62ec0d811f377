"""A training loop inside a tf.function on a model a factory makes
(``model = make_model(10)`` beside ``optimizer = tf.optimizers.Adam(1e-3)``,
``@tf.function def loop(): for x, y in dataset: train_step(x, y)``; a
held-out book's script). Keras 3 would create the optimizer's slots inside
the traced loop on several local replicas and fail; tfdist builds them in the
scope when it can name the optimizer and the model, and only warned here
because the model's construction is in the factory. The statement binding the
model beside the optimizer is enough to name it."""
from __future__ import annotations

import pytest

from tfdist.api import convert_file

PROGRAM = """\
import tensorflow as tf


def make_model(n_classes):
    return tf.keras.Sequential([tf.keras.Input((8,)), tf.keras.layers.Dense(n_classes)])


def train():
    dataset = tf.data.Dataset.from_tensor_slices(
        (tf.random.stateless_normal((256, 8), seed=(1, 2)), tf.zeros((256,), tf.int64))).batch(32)
    {model}
    loss = tf.losses.SparseCategoricalCrossentropy(from_logits=True)
    optimizer = tf.optimizers.Adam(1e-3)

    @tf.function
    def train_step(inputs, labels):
        with tf.GradientTape() as tape:
            loss_value = loss(labels, model(inputs))
        gradients = tape.gradient(loss_value, model.trainable_variables)
        optimizer.apply_gradients(zip(gradients, model.trainable_variables))
        return loss_value

    @tf.function
    def loop():
        for features, labels in dataset:
            loss_value = train_step(features, labels)
        return loss_value

    loop()


train()
"""


@pytest.mark.parametrize("model", ["model = make_model(10)", "model = make_model(n_classes=10)"])
def test_the_optimizer_is_built_on_a_factory_models_variables_in_the_scope(tmp_path, model):
    path = tmp_path / "train.py"
    path.write_text(PROGRAM.format(model=model))
    r = convert_file(path, backend="tf-distribute")
    assert r.status == "converted", r.error
    assert ("    with strategy.scope():\n        optimizer = tf.optimizers.Adam(1e-3 * strategy.num_replicas_in_sync)\n"
            "        optimizer.build(model.trainable_variables)\n") in r.code
    assert not [w for w in r.warnings if "runs inside a tf.function" in w.message], r.warnings
