"""A dataset helper of another module set up by a dict of settings and
returning the dataset with its step count (``dataset, steps_per_epoch =
get_dataset(config, shuffle=False)``, ``.batch(config["batch_size"])`` and
``len(x) // config["batch_size"]`` inside it), converted by `tfdist verify`
on each engine and run on 2 processes.

* Its shuffle runs only under its own flag, which this call turns off: not a
  shuffle to warn about (both engines warned before).
* tf.distribute: the batch is the global batch there, so it is multiplied
  where it is written -- the dict's value (warned before), or the argument
  (``make_dataset(512, 32)``); the step count the helper returns is then
  already a count of global batches and must not be divided again (before,
  it was: each worker ran a quarter of the original's steps on 2 workers,
  exit 0 -- verify's step check fails that).
* Horovod: the dataset is sharded where it is unpacked and the count divided.
The helper's module is not edited."""
from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

from conftest import cli_env, missing_stack, run_tfdist

pytestmark = pytest.mark.slow

PIPELINE = """import numpy as np
import tensorflow as tf


def get_dataset(config, shuffle=True):
    rng = np.random.RandomState(config["seed"])
    x = rng.rand(config["rows"], 8).astype("float32")
    y = (x.sum(axis=1) > 4).astype("int64")
    dataset = tf.data.Dataset.from_tensor_slices((x, y))
    if shuffle == True:
        dataset = dataset.shuffle(buffer_size=len(x))
    dataset = dataset.batch(config["batch_size"], drop_remainder=True).repeat()
    return dataset, len(x) // config["batch_size"]


def make_dataset(rows, batch_size, shuffle=True):
    rng = np.random.RandomState(0)
    x = rng.rand(rows, 8).astype("float32")
    y = (x.sum(axis=1) > 4).astype("int64")
    dataset = tf.data.Dataset.from_tensor_slices((x, y))
    if shuffle:
        dataset = dataset.shuffle(buffer_size=len(x))
    dataset = dataset.batch(batch_size, drop_remainder=True).repeat()
    return dataset, len(x) // batch_size
"""

SETTINGS = """import tensorflow as tf
from pipeline import get_dataset

config = {"seed": 0, "rows": 512, "batch_size": 32}
dataset, steps_per_epoch = get_dataset(config, shuffle=False)
print("seed:", config["seed"], "steps:", steps_per_epoch)
"""

ARGUMENTS = """import tensorflow as tf
from pipeline import make_dataset

dataset, steps_per_epoch = make_dataset(512, 32, shuffle=False)
"""

FIT = """

model = tf.keras.Sequential([tf.keras.layers.Dense(16, activation="relu"), tf.keras.layers.Dense(2)])
model.compile(optimizer=tf.keras.optimizers.SGD(0.05),
              loss=tf.keras.losses.SparseCategoricalCrossentropy(from_logits=True))
model.fit(dataset, steps_per_epoch=steps_per_epoch, epochs=2)
"""


def _project(tmp_path: Path, start: str) -> Path:
    project = tmp_path / "project"
    project.mkdir()
    (project / "pipeline.py").write_text(PIPELINE)
    (project / "train.py").write_text(start + FIT)
    return project / "train.py"


def _convert_without_warnings(script: Path, backend: str) -> None:
    res = subprocess.run([sys.executable, "-m", "tfdist", "convert", str(script), "--backend", backend, "-o",
                          str(script.with_name(f"converted_{backend}.py"))], cwd=script.parent, env=cli_env(),
                         capture_output=True, text=True, timeout=120)
    assert res.returncode == 0, res.stderr
    assert "WARNING" not in res.stdout + res.stderr, res.stdout


def _check(report: dict, tmp_path: Path, steps_per_rank: int) -> None:
    assert report["result"] == "PASS", report["reasons"]
    assert report["reference"]["ranks"][0]["optimizer_steps"] == 32      # 512 / 32 x 2 epochs
    assert [r["optimizer_steps"] for r in report["distributed"]["ranks"]] == [steps_per_rank] * 2
    assert (tmp_path / "project" / "pipeline.py").read_text() == PIPELINE


STARTS = {"settings_dict": SETTINGS, "batch_argument": ARGUMENTS}


@pytest.mark.timeout(300)
@pytest.mark.parametrize("start", sorted(STARTS))
def test_horovod(runtime_python, tmp_path, start):
    script = _project(tmp_path, STARTS[start])
    _convert_without_warnings(script, "horovod")
    res = run_tfdist(runtime_python, ["verify", "--json", "--timeout", "240", str(script)], tmp_path, timeout=290)
    assert res.returncode in (0, 1), res
    _check(json.loads(res.stdout), tmp_path, 16)


@pytest.mark.timeout(400)
@pytest.mark.parametrize("start", sorted(STARTS))
def test_tf_distribute(tmp_path, start):
    venv = os.environ.get("TFDIST_TF_DISTRIBUTE_VENV")
    if not venv:
        missing_stack("TFDIST_TF_DISTRIBUTE_VENV is not set: `bash scripts/test.sh` builds and exports it")
    script = _project(tmp_path, STARTS[start])
    _convert_without_warnings(script, "tf-distribute")
    proc = subprocess.run([str(Path(venv) / "bin" / "tfdist"), "verify", "--backend", "tf-distribute", "--json",
                           "--timeout", "300", str(script)], cwd=tmp_path, env=cli_env({"TF_USE_LEGACY_KERAS": "1"}),
                          capture_output=True, text=True, timeout=380)
    assert proc.returncode in (0, 1), proc.stderr[-3000:]
    report = json.loads(proc.stdout)
    _check(report, tmp_path, 16)   # each step reads a global batch of 2 x 32
