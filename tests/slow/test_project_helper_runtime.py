"""A training script that gets its dataset from a helper of another module
of its package (tensorflow/examples' shape: ``train, test, info =
utils.create_dataset(...)`` in main(), the step loop in a method), converted
by `tfdist verify` itself on each engine and run on 2 processes: the train
dataset is divided where it is unpacked, the helper's module is not edited,
and the samples show an equal, disjoint share per rank.

Before this was followed, the Horovod conversion divided nothing (each rank
ran every step on all the data; verify FAILs it on steps) and tf.distribute
refused the file."""
from __future__ import annotations

import json
import os
import subprocess
from pathlib import Path

import pytest

from conftest import cli_env, missing_stack, run_tfdist

pytestmark = pytest.mark.slow

UTILS = """import numpy as np
import tensorflow as tf


def create_dataset(batch_size, seed=42):
    rng = np.random.RandomState(0)
    x = rng.rand(512, 8).astype("float32")
    y = (x.sum(axis=1) > 4).astype("int64")
    xt = rng.rand(128, 8).astype("float32")
    yt = (xt.sum(axis=1) > 4).astype("int64")
    train = tf.data.Dataset.from_tensor_slices((x, y))
    train = train.shuffle(512, seed=seed).batch(batch_size)
    test = tf.data.Dataset.from_tensor_slices((xt, yt)).batch(batch_size)
    return train, test, {"classes": 2}
"""

TRAIN = """import tensorflow as tf
from proj.models import utils


class Train(object):
    def __init__(self, epochs, model):
        self.epochs = epochs
        self.optimizer = tf.keras.optimizers.SGD(learning_rate=0.1, momentum=0.9)
        self.loss_object = tf.keras.losses.SparseCategoricalCrossentropy(from_logits=True)
        self.model = model

    def train_step(self, image, label):
        with tf.GradientTape() as tape:
            loss = self.loss_object(label, self.model(image, training=True))
        grads = tape.gradient(loss, self.model.trainable_variables)
        self.optimizer.apply_gradients(zip(grads, self.model.trainable_variables))

    def custom_loop(self, train_dataset):
        for epoch in range(self.epochs):
            for image, label in train_dataset:
                self.train_step(image, label)


def main():
    model = tf.keras.Sequential([tf.keras.layers.Dense(2)])
    trainer = Train(2, model)
    train_dataset, test_dataset, _ = utils.create_dataset(64)
    trainer.custom_loop(train_dataset)
    images, labels = next(iter(test_dataset))
    print("test loss", float(trainer.loss_object(labels, model(images))))


if __name__ == "__main__":
    main()
"""


def _project(tmp_path: Path) -> Path:
    models = tmp_path / "proj" / "models"
    models.mkdir(parents=True)
    (tmp_path / "proj" / "__init__.py").write_text("")
    (models / "__init__.py").write_text("")
    (models / "utils.py").write_text(UTILS)
    (models / "train.py").write_text(TRAIN)
    return models / "train.py"


def _check(report: dict, tmp_path: Path) -> None:
    assert report["result"] == "PASS", report["reasons"]
    assert report["reference"]["ranks"][0]["optimizer_steps"] == 16      # 512 / 64 x 2 epochs
    assert [r["optimizer_steps"] for r in report["distributed"]["ranks"]] == [8, 8]
    assert report["samples"]["first_epoch_overlap"] == 0 and report["samples"]["coverage"] == 1.0
    assert (tmp_path / "proj" / "models" / "utils.py").read_text() == UTILS


@pytest.mark.timeout(300)
def test_horovod(runtime_python, tmp_path):
    script = _project(tmp_path)
    env = cli_env({"PYTHONPATH": os.pathsep.join([cli_env()["PYTHONPATH"], str(tmp_path)])})
    res = run_tfdist(runtime_python, ["verify", "--json", "--timeout", "240", str(script)], tmp_path,
                     timeout=290, env=env)
    assert res.returncode in (0, 1), res
    _check(json.loads(res.stdout), tmp_path)


@pytest.mark.timeout(400)
def test_tf_distribute(tmp_path):
    venv = os.environ.get("TFDIST_TF_DISTRIBUTE_VENV")
    if not venv:
        missing_stack("TFDIST_TF_DISTRIBUTE_VENV is not set: `bash scripts/test.sh` builds and exports it")
    script = _project(tmp_path)
    env = cli_env({"PYTHONPATH": os.pathsep.join([cli_env()["PYTHONPATH"], str(tmp_path)])})
    proc = subprocess.run([str(Path(venv) / "bin" / "tfdist"), "verify", "--backend", "tf-distribute", "--json",
                           "--timeout", "300", str(script)], cwd=tmp_path, env=env, capture_output=True, text=True,
                          timeout=380)
    assert proc.returncode in (0, 1), proc.stderr[-3000:]
    _check(json.loads(proc.stdout), tmp_path)
