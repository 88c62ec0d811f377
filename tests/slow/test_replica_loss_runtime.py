"""The loss each replica differentiates, checked by numbers: a tape step
whose loss adds the model's regularisation losses to a Keras loss object's
value (``loss = loss_fn(y, pred); loss += sum(model.losses)``), converted
with --backend tf-distribute and run on 2 workers, must end with the weights
of the original run on one process with the global batch and the scaled
learning rate. Keras 3 divides the loss object's value by the number of
replicas itself; the added regularisation must be divided by tfdist --
left whole, the optimizer's sum over the replicas counts it twice, and the
weights differ (what this test catches)."""
from __future__ import annotations

import os
import subprocess
from pathlib import Path

import numpy as np
import pytest

from conftest import cli_env, missing_stack

pytestmark = pytest.mark.slow

SCRIPT = '''import sys

import numpy as np
import tensorflow as tf
import keras

BATCH = {batch}
LR = {lr}
x = np.linspace(-1.0, 1.0, 64, dtype="float32").reshape(16, 4)
y = (x @ np.array([[1.0], [-2.0], [0.5], [3.0]], dtype="float32") + 0.25).astype("float32")
model = keras.Sequential([keras.Input(shape=(4,)),
                          keras.layers.Dense(1, kernel_initializer="ones", bias_initializer="zeros",
                                             kernel_regularizer=keras.regularizers.L2(0.5))])
optimizer = keras.optimizers.SGD(LR)
loss_fn = keras.losses.MeanSquaredError()
ds = tf.data.Dataset.from_tensor_slices((x, y)).batch(BATCH)


@tf.function
def train_step(xb, yb):
    with tf.GradientTape() as tape:
        pred = model(xb, training=True)
        loss = loss_fn(yb, pred)
        loss += sum(model.losses)
    grads = tape.gradient(loss, model.trainable_weights)
    optimizer.apply_gradients(zip(grads, model.trainable_weights))
    return loss


for epoch in range(3):
    for xb, yb in ds:
        train_step(xb, yb)
np.save(sys.argv[1], np.concatenate([w.reshape(-1) for w in model.get_weights()]))
'''


def _venv() -> Path:
    value = os.environ.get("TFDIST_TF_DISTRIBUTE_VENV")
    if not value:
        missing_stack("TFDIST_TF_DISTRIBUTE_VENV is not set: `bash scripts/test.sh` builds and exports it")
    return Path(value)


@pytest.mark.timeout(400)
def test_regularised_keras_loss_trains_as_the_global_batch(tmp_path):
    from tfdist.api import convert_source

    venv = _venv()
    env = cli_env({"CUDA_VISIBLE_DEVICES": ""})
    original = SCRIPT.format(batch=4, lr=0.05)
    result = convert_source(original.encode(), "train.py", backend="tf-distribute")
    assert result.status == "converted" and not result.warnings, result.warnings
    assert "loss += sum(model.losses) / strategy.num_replicas_in_sync" in result.code
    converted = tmp_path / "train_tfd.py"
    converted.write_text(result.code)
    # the reference: one process, the global batch (2 x 4) and the scaled rate (2 x 0.05)
    reference = tmp_path / "reference.py"
    reference.write_text(SCRIPT.format(batch=8, lr=0.1))
    ref = subprocess.run([str(venv / "bin" / "python"), str(reference), str(tmp_path / "ref.npy")],
                         cwd=tmp_path, env=env, capture_output=True, text=True, timeout=200)
    assert ref.returncode == 0, ref.stderr[-3000:]
    run = subprocess.run([str(venv / "bin" / "tfdist"), "run", "--backend", "tf-distribute", "-np", "2",
                          "--timeout", "240", str(converted), str(tmp_path / "dist.npy")],
                         cwd=tmp_path, env=env, capture_output=True, text=True, timeout=300)
    assert run.returncode == 0, (run.stdout[-3000:], run.stderr[-3000:])
    expected, got = np.load(tmp_path / "ref.npy"), np.load(tmp_path / "dist.npy")
    np.testing.assert_allclose(got, expected, rtol=1e-5, atol=1e-6)
