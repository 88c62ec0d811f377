"""GradientTape loops under ParameterServerStrategy (rules/parameter_server_tape.py):
a step function of the batch, called in a loop over a tf.data dataset, is
scheduled by the chief's coordinator on the workers, in every spelling of
that shape (enumerate, a whole-element batch, a plain or a tf.function step,
the loop in main()); what the coordinator cannot schedule is refused with the
reason and the edit. Runtime: tests/slow/test_parameter_server_verify.py."""
from __future__ import annotations

import textwrap

import pytest

from tfdist.api import convert_source
from tfdist.options import Options
import dataclasses

PS = dataclasses.replace(Options.of("tf-distribute"), strategy="parameter-server")

HEAD = """import numpy as np
import tensorflow as tf

x = np.random.rand(256, 4).astype("float32")
y = np.random.rand(256, 1).astype("float32")
dataset = tf.data.Dataset.from_tensor_slices((x, y)).shuffle(256).batch(32)
model = tf.keras.Sequential([tf.keras.Input((4,)), tf.keras.layers.Dense(1)])
optimizer = tf.keras.optimizers.Adam(0.01)
loss_fn = tf.keras.losses.MeanSquaredError()
"""
STEP = """

{decorator}def train_step(xb, yb):
    with tf.GradientTape() as tape:
        loss = loss_fn(yb, model(xb, training=True))
    grads = tape.gradient(loss, model.trainable_variables)
    optimizer.apply_gradients(zip(grads, model.trainable_variables))
    return loss
"""
LOOPS = {
    "plain loop": "for epoch in range(3):\n    for xb, yb in dataset:\n        loss = train_step(xb, yb)\n"
                  "    print(epoch, float(loss))\n",
    "enumerate": "for epoch in range(3):\n    for step, (xb, yb) in enumerate(dataset):\n"
                 "        loss = train_step(xb, yb)\n        if step % 4 == 0:\n            print(step, f\"{loss:.3f}\")\n",
    "in main()": "def main():\n    for epoch in range(3):\n        for xb, yb in dataset:\n"
                 "            loss = train_step(xb, yb)\n        print(epoch, float(loss))\n\n\nmain()\n",
    "arguments swapped": "for epoch in range(3):\n    for yb, xb in dataset.map(lambda a, b: (b, a)):\n"
                         "        train_step(xb, yb)\n",
}


@pytest.mark.parametrize("decorator", ["@tf.function\n", ""], ids=["tf.function", "plain"])
@pytest.mark.parametrize("loop", LOOPS)
def test_a_step_of_the_batch_in_a_loop_over_a_dataset_is_scheduled(loop, decorator):
    source = HEAD + STEP.format(decorator=decorator) + "\n\n" + LOOPS[loop]
    result = convert_source(source.encode(), "train.py", backend=PS)
    assert result.status == "converted", (loop, result.error)
    code = result.code
    assert "scheduled_batches(dataset" in code and "scheduled_step(train_step, xb, yb)" in code, code
    assert "with strategy.scope():\n    model = " in code and "    optimizer = tf.keras.optimizers.Adam(0.01)" in code
    assert 'loss_fn = tf.keras.losses.MeanSquaredError(reduction="none")' in code
    assert "loss = tf.reduce_mean(loss_fn(yb, model(xb, training=True)))" in code
    assert 'os.environ.setdefault("TF_USE_LEGACY_KERAS", "1")' in code  # Keras 3 runs no parameter servers
    assert "coordinator.join()" in code and "coordinator.schedule(" in code
    again = convert_source(result.data, "train.py", backend=PS)
    assert again.status in ("already-distributed", "unchanged"), again.status


def test_a_step_of_a_whole_element_is_scheduled_on_it():
    source = HEAD.replace("(x, y)).shuffle", "{'x': x, 'y': y}).shuffle") + textwrap.dedent("""

        @tf.function
        def train_step(batch):
            with tf.GradientTape() as tape:
                loss = loss_fn(batch["y"], model(batch["x"]))
            grads = tape.gradient(loss, model.trainable_variables)
            optimizer.apply_gradients(zip(grads, model.trainable_variables))


        for batch in dataset:
            train_step(batch)
        """)
    result = convert_source(source.encode(), "train.py", backend=PS)
    assert result.status == "converted", result.error
    assert "for batch in scheduled_batches(dataset):\n    scheduled_step(train_step, batch)" in result.code


REFUSED = {
    "the step written in the loop": (
        "for xb, yb in dataset:\n    with tf.GradientTape() as tape:\n        loss = loss_fn(yb, model(xb))\n"
        "    grads = tape.gradient(loss, model.trainable_variables)\n"
        "    optimizer.apply_gradients(zip(grads, model.trainable_variables))\n",
        "is not a function of this module's taking the batch"),
    "more than the batch passed": (
        STEP.format(decorator="").replace("def train_step(xb, yb)", "def train_step(model, xb, yb)")
        + "\n\nfor xb, yb in dataset:\n    train_step(model, xb, yb)\n", "is not called on the loop's batch alone"),
    "a loop over arrays": (
        STEP.format(decorator="") + "\n\nfor i in range(0, 256, 32):\n    train_step(x[i:i + 32], y[i:i + 32])\n",
        "iterates range(0, 256, 32)"),
    "the batch read beside the step": (
        STEP.format(decorator="") + "\n\nfor xb, yb in dataset:\n    train_step(xb, yb)\n    print(xb.shape)\n",
        "reads the batch (xb) outside train_step()"),
    "a metric updated in the step": (
        "acc = tf.keras.metrics.Mean()\n" + STEP.format(decorator="").replace(
            "    return loss", "    acc.update_state(loss)") + "\n\nfor xb, yb in dataset:\n    train_step(xb, yb)\n",
        "(a Keras metric) is updated in train_step()"),
}


@pytest.mark.parametrize("name", REFUSED)
def test_what_the_coordinator_cannot_schedule_is_refused_with_the_edit(name):
    tail, reason = REFUSED[name]
    source = HEAD + "\n" + tail
    result = convert_source(source.encode(), "train.py", backend=PS)
    assert result.status == "unsupported" and reason in result.error, (name, result.error)
    assert result.error_line and "--strategy mirrored" in result.error


def test_keras_3_is_refused_with_the_upstream_reason():
    source = "import keras\n" + HEAD.replace("tf.keras.", "keras.") + STEP.format(decorator="") + \
        "\n\nfor xb, yb in dataset:\n    train_step(xb, yb)\n"
    result = convert_source(source.encode(), "train.py", backend=PS)
    assert result.status == "unsupported" and "keras-team/keras#18624" in result.error and result.error_line == 1
