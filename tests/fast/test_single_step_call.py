"""A loop over a distributed batch that calls one tf.function step and reads
the batch again after it (``loss, acc = train_step(features, labels)`` then
``tf.summary.image("train", features, ...)``; a held-out book's script).
tfdist wrapped the call in a plain function run on the replicas
(``def train_step_(...)``): a tf.function step with apply_gradients nested in a
plain one stopped every rank at its first step ("merge_call called while
defining a new graph or a tf.function"). One statement calling a step
function is run on the replicas as it is; the batch read later is made this
worker's rows after it. A step written in the loop still becomes a function."""
from __future__ import annotations

import pytest

from tfdist.api import convert_file

PROGRAM = """\
import numpy as np
import tensorflow as tf

train_x = np.random.rand(512, 8).astype("float32")
train_y = np.random.randint(0, 3, 512)
model = tf.keras.Sequential([tf.keras.Input((8,)), tf.keras.layers.Dense(3)])
optimizer = tf.keras.optimizers.Adam(1e-3)
loss = tf.keras.losses.SparseCategoricalCrossentropy(from_logits=True)


@tf.function
def train_step(inputs, labels):
    with tf.GradientTape() as tape:
        loss_value = tf.reduce_mean(tf.keras.losses.sparse_categorical_crossentropy(labels, model(inputs), from_logits=True))
    gradients = tape.gradient(loss_value, model.trainable_variables)
    optimizer.apply_gradients(zip(gradients, model.trainable_variables))
    return loss_value


batch_size = 32
for epoch in range(2):
    for t in range(int(train_x.shape[0] / batch_size)):
        features, labels = train_x[t * batch_size:(t + 1) * batch_size], train_y[t * batch_size:(t + 1) * batch_size]
        {step}
        if t % 10 == 0:
            print(t, float(loss_value), features.shape)
"""

SINGLE = {
    "assigned": "loss_value = train_step(features, labels)",
    "keywords": "loss_value = train_step(inputs=features, labels=labels)",
}


@pytest.mark.parametrize("name", sorted(SINGLE))
def test_one_step_call_runs_on_the_replicas_as_it_is(tmp_path, name):
    path = tmp_path / "train.py"
    path.write_text(PROGRAM.format(step=SINGLE[name]))
    r = convert_file(path, backend="tf-distribute")
    assert r.status == "converted", r.error
    call = SINGLE[name].split(" = ")[1]
    assert f"loss_value = run_on_replicas({call.replace('train_step(', 'train_step, ')}" in r.code
    assert "def train_step_(" not in r.code
    after = r.code[r.code.index("loss_value = run_on_replicas("):]
    assert after.splitlines()[1].strip() == "features = local_values(features)"


def test_a_step_written_in_the_loop_still_becomes_a_function(tmp_path):
    step = ("with tf.GradientTape() as tape:\n"
            "            loss_value = tf.reduce_mean(tf.square(model(features)))\n"
            "        grads = tape.gradient(loss_value, model.trainable_variables)\n"
            "        optimizer.apply_gradients(zip(grads, model.trainable_variables))")
    path = tmp_path / "train.py"
    path.write_text(PROGRAM.format(step=step))
    r = convert_file(path, backend="tf-distribute")
    assert r.status == "converted", r.error
    assert "def train_step_(" in r.code and "run_on_replicas(train_step_, " in r.code
