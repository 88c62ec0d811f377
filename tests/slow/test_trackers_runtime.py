"""Experiment trackers report one run, from the chief (rules/trackers.py).

A Keras fit script reporting to Weights & Biases (offline) and MLflow (a
local file store), with a tqdm bar, is run three ways on the tf-distribute
stack, each in a folder of its own, and the runs the trackers recorded are
counted:

* the original on one process: one wandb run, one MLflow run (the count
  this test reads is right);
* the original started twice at once, as N processes of an unconverted
  script would be: two of each (the count can fail);
* the conversion under ``tfdist verify`` as 2 MultiWorkerMirrored workers:
  training verified as usual, and one run of each, with the metrics the
  script logs in it.

The Horovod stack (TensorFlow 2.15) is not measured: wandb 0.31 needs a
protobuf newer than TensorFlow 2.15 accepts. Its conversion differs only in
the chief expression (fixtures: tests/fast/test_trackers.py).
"""
from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest

from conftest import cli_env, missing_stack

pytestmark = pytest.mark.slow

SCRIPT = Path(__file__).parent / "runtime_scripts" / "keras_tracked_runs.py"


def _venv() -> Path:
    venv = os.environ.get("TFDIST_TF_DISTRIBUTE_VENV")
    if not venv:
        missing_stack("TFDIST_TF_DISTRIBUTE_VENV is not set: `bash scripts/test.sh` builds and exports it")
    return Path(venv)


def _tracker_env(folder: Path) -> dict:
    return cli_env({"WANDB_MODE": "offline", "WANDB_DIR": str(folder), "WANDB_SILENT": "true",
                    "MLFLOW_TRACKING_URI": (folder / "mlruns").as_uri(), "MLFLOW_ALLOW_FILE_STORE": "true"})


def _wandb_runs(folder: Path) -> list:
    return sorted((folder / "wandb").glob("offline-run-*"))


def _mlflow_runs(folder: Path) -> list:
    """The runs of the script's experiment: folders holding a meta.yaml with a run_id."""
    return sorted(p.parent for p in (folder / "mlruns").glob("*/*/meta.yaml") if "run_id:" in p.read_text())


def _mlflow_metric(run: Path, name: str) -> bool:
    return (run / "metrics" / name).is_file() and (run / "metrics" / name).read_text().strip() != ""


@pytest.mark.timeout(600)
@pytest.mark.extended   # measures what the trackers do (the fact the conversion rests on), not the conversion
def test_original_counts_one_run_per_process(tmp_path):
    python = str(_venv() / "bin" / "python")
    one, two = tmp_path / "one", tmp_path / "two"
    one.mkdir(), two.mkdir()
    proc = subprocess.run([python, str(SCRIPT)], cwd=one, env=_tracker_env(one), capture_output=True, text=True,
                          timeout=300)
    assert proc.returncode == 0, proc.stderr[-3000:]
    assert len(_wandb_runs(one)) == 1 and len(_mlflow_runs(one)) == 1, (_wandb_runs(one), _mlflow_runs(one))
    procs = [subprocess.Popen([python, str(SCRIPT)], cwd=two, env=_tracker_env(two), stdout=subprocess.PIPE,
                              stderr=subprocess.PIPE, text=True) for _ in range(2)]
    outs = [p.communicate(timeout=300) for p in procs]
    assert all(p.returncode == 0 for p in procs), [o[1][-2000:] for o in outs]
    assert len(_wandb_runs(two)) == 2 and len(_mlflow_runs(two)) == 2, (_wandb_runs(two), _mlflow_runs(two))
    assert sum(err.count("evaluating:   0%") for _, err in outs) == 2  # a bar per process (started once each)


@pytest.mark.timeout(900)
def test_converted_reports_one_run_from_the_chief(tmp_path):
    venv = _venv()
    tfdist = str(venv / "bin" / "tfdist")
    verified, launched = tmp_path / "verified", tmp_path / "launched"
    verified.mkdir(), launched.mkdir()
    # trains correctly (verify also runs the original once, for reference: its own run)
    proc = subprocess.run([tfdist, "verify", "--backend", "tf-distribute", "-np", "2", "--timeout", "300",
                           str(SCRIPT)], cwd=verified, env=_tracker_env(verified), capture_output=True, text=True,
                          timeout=420)
    assert proc.returncode == 0 and "PASS" in proc.stdout, (proc.stdout[-3000:], proc.stderr[-2000:])
    assert len(_wandb_runs(verified)) == 2 and len(_mlflow_runs(verified)) == 2  # the original's, the chief's
    # the conversion alone, on 2 workers: one run of each tracker, holding what the script logs
    converted = launched / "train.py"
    proc = subprocess.run([tfdist, "convert", "--backend", "tf-distribute", str(SCRIPT), "-o", str(converted)],
                          cwd=launched, env=cli_env(), capture_output=True, text=True, timeout=120)
    assert proc.returncode == 0, proc.stderr[-2000:]
    proc = subprocess.run([tfdist, "run", "--backend", "tf-distribute", "-np", "2", "--timeout", "300",
                           str(converted)], cwd=launched, env=_tracker_env(launched), capture_output=True, text=True,
                          timeout=420)
    assert proc.returncode == 0, (proc.stdout[-3000:], proc.stderr[-2000:])
    wandb_runs, mlflow_runs = _wandb_runs(launched), _mlflow_runs(launched)
    assert len(wandb_runs) == 1, wandb_runs
    assert len(mlflow_runs) == 1, mlflow_runs
    assert _mlflow_metric(mlflow_runs[0], "final_loss")
    assert any(wandb_runs[0].glob("*.wandb")), list(wandb_runs[0].iterdir())
    # one progress bar drawn (by the chief): one bar started at 0/4 and reaching its end, 4/4 batches
    # (tqdm may redraw its finished line on close(), so the start is what counts the bars)
    output = proc.stdout + proc.stderr
    assert output.count("evaluating:   0%") == 1, output[-3000:]
    assert "evaluating: 100%" in output, output[-3000:]
