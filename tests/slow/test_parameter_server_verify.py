"""``tfdist verify --strategy parameter-server`` for real (issue 41): a small
tf-keras fit() script converted with ``--strategy parameter-server``, its
original run as one process and its conversion as a chief, 2 workers and 1
parameter server on localhost (the TF 2.21 + tf-keras stack). It must PASS
with the report's figures (the steps the chief scheduled are the original's,
the loss within the band, the checks that do not apply skipped with their
reason), and no task may be left running. A conversion broken by hand
(half the steps per epoch) given with ``--converted`` must FAIL (the extended
tier: the slow tier's budget keeps one run)."""
from __future__ import annotations

import json
import os
import subprocess
from pathlib import Path

import pytest

from conftest import cli_env, run_tfdist, tf_distribute_python

pytestmark = pytest.mark.slow

ROWS, BATCH, EPOCHS = 1024, 64, 2   # 16 steps an epoch, 32 in all
SCRIPT = f'''"""A tf-keras embedding model trained by fit() on synthetic NumPy arrays."""
import numpy as np
import tensorflow as tf
import tf_keras as keras

VOCAB, DIM = 500, 16

rng = np.random.RandomState(0)
x_train = rng.randint(0, VOCAB, size=({ROWS}, 8))
y_train = ((x_train < VOCAB // 2).sum(axis=1) > 4).astype("float32")

model = keras.Sequential([
    keras.layers.Embedding(VOCAB, DIM),
    keras.layers.GlobalAveragePooling1D(),
    keras.layers.Dense(1, activation="sigmoid"),
])
model.compile(optimizer=keras.optimizers.Adam(learning_rate=0.01), loss="binary_crossentropy",
              steps_per_execution=8)
model.fit(x_train, y_train, batch_size={BATCH}, epochs={EPOCHS}, verbose=2)
model.save_weights("weights.h5")
'''
STEPS = -(-ROWS // BATCH) * EPOCHS


def _running(directory: Path) -> list:
    """Processes whose working directory lies under ``directory`` (tasks left behind)."""
    out = []
    for pid in filter(str.isdigit, os.listdir("/proc")):
        try:
            if os.readlink(f"/proc/{pid}/cwd").startswith(str(directory)):
                out.append(int(pid))
        except OSError:
            continue
    return out


def _checks(report: dict) -> dict:
    return {c["name"]: c for c in report["check_results"]}


@pytest.mark.timeout(300)
def test_verify_passes_a_fit_script_on_a_chief_two_workers_and_a_parameter_server(tmp_path):
    python = tf_distribute_python()
    (tmp_path / "train.py").write_text(SCRIPT)
    res = run_tfdist(python, ["verify", "--strategy", "parameter-server", "-np", "2", "--ps", "1", "--compare",
                              "--report", "report.json", "--timeout", "240", "train.py"], tmp_path, timeout=280)
    assert res.returncode == 0, res
    assert "parameter servers: a chief, 2 workers, 1 parameter server(s)" in res.stdout, res
    assert res.stdout.rstrip().splitlines()[-2:] == ["PASS", "  report written to report.json"], res
    report = json.loads((tmp_path / "report.json").read_text())
    assert report["result"] == "PASS" and report["task_labels"] == ["chief:0", "worker:0", "worker:1", "ps:0"]
    checks = _checks(report)
    assert all(c["passed"] for c in checks.values())
    assert checks["steps-scheduled"]["measured"] == {"original": STEPS, "cluster": STEPS}, checks
    assert checks["exit-codes"]["measured"]["tasks"] == {
        "chief:0": 0, "worker:0": "stopped after the chief", "worker:1": "stopped after the chief",
        "ps:0": "stopped after the chief"}, checks
    assert checks["learning-rate-scaled"]["expected"] == [pytest.approx(0.01)]
    assert checks["chief-writes"]["measured"] == {"chief": 1, "other_tasks": {}}
    loss = checks["loss-within-tolerance"]["measured"]
    assert 0 < loss["final"] < 0.69 and 0 < loss["original_final"] < 0.69, loss
    assert [s.split(":")[0] for s in report["skipped"]] == ["variables-identical", "samples"]
    assert "the workers hold no variables" in res.stdout
    assert _running(tmp_path) == []


@pytest.mark.extended
@pytest.mark.timeout(300)
def test_verify_fails_a_conversion_given_half_the_steps_per_epoch(tmp_path):
    python = tf_distribute_python()
    (tmp_path / "train.py").write_text(SCRIPT)
    convert = subprocess.run([python, "-m", "tfdist", "convert", "train.py", "--backend", "tf-distribute",
                              "--strategy", "parameter-server", "-o", "train_ps.py"],
                             cwd=tmp_path, env=cli_env(), capture_output=True, text=True, timeout=120)
    assert convert.returncode == 0, convert.stderr
    converted = (tmp_path / "train_ps.py").read_text()
    call = f"batch_size={BATCH})"
    assert converted.count(call) == 1, converted
    half = STEPS // EPOCHS // 2
    (tmp_path / "broken.py").write_text(converted.replace(call, f"batch_size={BATCH}, steps_per_epoch={half})"))
    res = run_tfdist(python, ["verify", "--converted", "--original", "train.py", "-np", "2", "--ps", "1",
                              "--compare", "--json", "--timeout", "240", "broken.py"], tmp_path, timeout=280)
    assert res.returncode == 1, res
    report = json.loads(res.stdout)
    steps = _checks(report)["steps-scheduled"]
    assert not steps["passed"] and steps["measured"] == {"original": STEPS, "cluster": STEPS // 2}, steps
    assert steps["detail"] in report["reasons"], report["reasons"]
    assert _running(tmp_path) == []


TAPE = Path(__file__).resolve().parents[2] / "src" / "tfdist" / "rules" / "examples" / "gradient_tape" / \
    "parameter_server_tape" / "input.py"


@pytest.mark.timeout(300)
def test_verify_passes_a_tape_loop_the_coordinator_schedules(tmp_path):
    """The rule's example: a tf.function step of the batch in a loop over a
    dataset (1024 rows, batch 32, 4 epochs: 128 steps), converted by verify
    itself, run as a chief, 2 workers and 1 parameter server: the chief
    scheduled the original's steps, the loss within the band."""
    python = tf_distribute_python()
    (tmp_path / "train.py").write_bytes(TAPE.read_bytes())
    res = run_tfdist(python, ["verify", "--strategy", "parameter-server", "-np", "2", "--ps", "1", "--compare",
                              "--json", "--timeout", "240", "train.py"], tmp_path, timeout=280)
    assert res.returncode == 0, res
    report = json.loads(res.stdout)
    assert report["result"] == "PASS", report["reasons"]
    checks = _checks(report)
    assert checks["steps-scheduled"]["measured"] == {"original": 128, "cluster": 128}, checks
    assert checks["chief-writes"]["measured"] == {"chief": 1, "other_tasks": {}}
    loss = checks["loss-within-tolerance"]["measured"]
    assert 0 < loss["final"] < 0.5 and 0 < loss["original_final"] < 0.5, loss
    assert _running(tmp_path) == []
