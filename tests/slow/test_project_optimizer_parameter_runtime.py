"""A project whose entry script builds the data, the model and the optimizer
and hands them to a training function of another module each epoch
(``train.train(train_dataset, model, optimizer)``): the training module is
converted, the entry script has no training loop and is left as it is.

The optimizer is a parameter only the other module binds, so tfdist cannot
see where it is built: its learning rate is scaled on the object itself, once,
where the step first runs eagerly -- at the apply_gradients of an eager loop,
or where the loop hands the optimizer to its tf.function step. Run on 2
processes under horovodrun by `tfdist verify --converted`: every rank trains
with twice the original's rate (recorded by the probe when the run ends),
half the steps each, disjoint samples, pairs intact.

Before this, the rate was left unscaled with a hand-work warning."""
from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pytest

from conftest import cli_env, run_tfdist

pytestmark = pytest.mark.slow

MAIN = """import numpy as np
import tensorflow as tf
import train

rng = np.random.RandomState(0)
x = rng.rand(512, 8).astype("float32")
y = (x.sum(axis=1) > 4).astype("int64")
train_dataset = tf.data.Dataset.from_tensor_slices((x, y)).batch(32)
model = tf.keras.Sequential([tf.keras.layers.Dense(2)])
optimizer = tf.keras.optimizers.SGD(0.05)
for epoch in range(2):
    loss = train.train(train_dataset, model, optimizer)
    print("epoch", epoch, "loss", float(loss))
"""

EAGER = """import tensorflow as tf

loss_object = tf.keras.losses.SparseCategoricalCrossentropy(from_logits=True)


def train(train_dataset, model, optimizer):
    losses = []
    for data, target in train_dataset:
        with tf.GradientTape() as tape:
            loss = loss_object(target, model(data, training=True))
        grads = tape.gradient(loss, model.trainable_weights)
        optimizer.apply_gradients(zip(grads, model.trainable_weights))
        losses.append(loss)
    return sum(losses) / len(losses)
"""

GRAPH = """import tensorflow as tf

loss_object = tf.keras.losses.SparseCategoricalCrossentropy(from_logits=True)


@tf.function
def train_step(data, target, model, optimizer):
    with tf.GradientTape() as tape:
        loss = loss_object(target, model(data, training=True))
    grads = tape.gradient(loss, model.trainable_weights)
    optimizer.apply_gradients(zip(grads, model.trainable_weights))
    return loss


def train(train_dataset, model, optimizer):
    losses = []
    for data, target in train_dataset:
        losses.append(train_step(data, target, model, optimizer))
    return sum(losses) / len(losses)
"""


def _run(runtime_python, tmp_path: Path, train_module: str) -> dict:
    original = tmp_path / "project"
    original.mkdir()
    (original / "main.py").write_text(MAIN)
    (original / "train.py").write_text(train_module)
    converted = tmp_path / "converted"
    res = subprocess.run([sys.executable, "-m", "tfdist", "convert", str(original), "-o", str(converted),
                          "--backend", "horovod"],
                         cwd=tmp_path, env=cli_env(), capture_output=True, text=True, timeout=120)
    assert res.returncode == 0, res.stderr
    assert "WARNING" not in res.stdout + res.stderr, res.stdout
    assert (converted / "main.py").read_text() == MAIN  # no training loop: left as written
    assert "with_scaled_learning_rate(optimizer" in (converted / "train.py").read_text()
    # main.py itself shows no engine (its helper module is converted): --backend says it
    res = run_tfdist(runtime_python, ["verify", "--backend", "horovod", "--json", "--timeout", "240", "--converted",
                                      str(converted / "main.py"),
                                      "--original", str(original / "main.py")], tmp_path, timeout=290)
    assert res.returncode in (0, 1), res
    return json.loads(res.stdout)


def _check(report: dict) -> None:
    assert report["result"] == "PASS", report["reasons"]
    assert report["reference"]["ranks"][0]["optimizer_steps"] == 32      # 512 / 32 x 2 epochs
    assert [r["optimizer_steps"] for r in report["distributed"]["ranks"]] == [16, 16]
    assert report["samples"]["first_epoch_overlap"] == 0 and report["samples"]["coverage"] == 1.0
    original = [o["rate"] for o in report["reference"]["ranks"][0]["keras_optimizers"] if o["iterations"]]
    ranks = [[o["rate"] for o in r["keras_optimizers"] if o["iterations"]] for r in report["distributed"]["ranks"]]
    assert original == [pytest.approx(0.05)]
    assert ranks == [[pytest.approx(0.1)], [pytest.approx(0.1)]]  # scaled once, not once per epoch


@pytest.mark.timeout(400)
def test_eager_loop_in_another_module(runtime_python, tmp_path):
    _check(_run(runtime_python, tmp_path, EAGER))


@pytest.mark.timeout(400)
def test_tf_function_step_in_another_module(runtime_python, tmp_path):
    _check(_run(runtime_python, tmp_path, GRAPH))
