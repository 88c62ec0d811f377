"""A helper of another module that makes windows of a series (window(),
flat_map, shuffle under TensorFlow's global seed, batch) and is handed the
series itself: the series must not be sliced by rank before the windows are
made -- every rank would train on windows of every other step, a different
series, exit 0 (what tfdist did before). The batches the helper returns are
shared out at the call instead, in whole rounds of batches (its size is not
known), and the global seed makes every rank shuffle alike.

The series is 0, 1, 2, ... / 1000, so each window's label is its last step
plus 1/1000: the loop variant trains in an eager tape loop, where the probe
records every window and its label, and the test checks that every label is
that of its window, that the ranks' windows are disjoint, and that together
they cover the original's. Run by `tfdist verify` on 2 Horovod processes."""
from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pytest

from conftest import cli_env, run_tfdist

pytestmark = pytest.mark.slow

PIPELINE = """import tensorflow as tf


def windowed_dataset(series, window_size, batch_size, shuffle_buffer):
    dataset = tf.data.Dataset.from_tensor_slices(series)
    dataset = dataset.window(window_size + 1, shift=1, drop_remainder=True)
    dataset = dataset.flat_map(lambda window: window.batch(window_size + 1))
    dataset = dataset.shuffle(shuffle_buffer).map(lambda window: (window[:-1], window[-1]))
    return dataset.batch(batch_size).prefetch(1)
"""

HEAD = """import numpy as np
import tensorflow as tf
from pipeline import windowed_dataset

series = np.arange(330, dtype="float32") / 1000.0
tf.random.set_seed(51)
train_set = windowed_dataset(series, 10, 16, shuffle_buffer=100)
model = tf.keras.Sequential([tf.keras.layers.Lambda(lambda w: tf.reshape(w, (-1, 10))),
                             tf.keras.layers.Dense(8, activation="relu"), tf.keras.layers.Dense(1)])
optimizer = tf.keras.optimizers.SGD(0.01)
"""

LOOP = HEAD + """
for epoch in range(2):
    for windows, targets in train_set:
        with tf.GradientTape() as tape:
            loss = tf.reduce_mean(tf.square(model(windows, training=True)[:, 0] - targets))
        grads = tape.gradient(loss, model.trainable_variables)
        optimizer.apply_gradients(zip(grads, model.trainable_variables))
"""

FIT = HEAD + """
model.compile(optimizer=optimizer, loss="mse")
model.fit(train_set, epochs=2)
"""


def _run(runtime_python, tmp_path: Path, script_text: str) -> dict:
    project = tmp_path / "project"
    project.mkdir()
    (project / "pipeline.py").write_text(PIPELINE)
    script = project / "train.py"
    script.write_text(script_text)
    res = subprocess.run([sys.executable, "-m", "tfdist", "convert", str(script), "-o", str(tmp_path / "out.py"),
                          "--backend", "horovod"],
                         cwd=project, env=cli_env(), capture_output=True, text=True, timeout=120)
    assert res.returncode == 0 and "WARNING" not in res.stdout + res.stderr, res.stdout + res.stderr
    assert "series[hvd.rank()" not in (tmp_path / "out.py").read_text()
    res = run_tfdist(runtime_python, ["verify", "--json", "--timeout", "240", str(script)], tmp_path, timeout=290)
    assert res.returncode in (0, 1), res
    report = json.loads(res.stdout)
    assert report["result"] == "PASS", report["reasons"]
    ranks = [r["optimizer_steps"] for r in report["distributed"]["ranks"]]
    assert ranks[0] == ranks[1], ranks
    return report


@pytest.mark.timeout(400)
def test_tape_loop_windows_stay_whole_and_disjoint(runtime_python, tmp_path):
    report = _run(runtime_python, tmp_path, LOOP)
    # 320 windows in 20 batches: 40 steps in 2 epochs; 10 rounds of 2 batches per epoch
    assert report["reference"]["ranks"][0]["optimizer_steps"] == 40
    assert [r["optimizer_steps"] for r in report["distributed"]["ranks"]] == [20, 20]
    samples = report["samples"]
    assert samples["first_epoch_overlap"] == 0 and samples["coverage"] >= 0.9, samples


@pytest.mark.timeout(400)
def test_fit_on_the_helpers_batches(runtime_python, tmp_path):
    _run(runtime_python, tmp_path, FIT)
