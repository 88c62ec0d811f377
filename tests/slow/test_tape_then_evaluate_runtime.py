"""A tape loop, then the model compiled and evaluated with Keras's own loop
(tests/slow/evaluate/tape_then_evaluate.py, a held-out cookbook's shape),
on 2 TF_CONFIG workers under Keras 3: the previous conversion trained, then
both workers stopped in evaluate() ("Attempt to convert a value
(PerReplica...)", keras-team/keras#20585). With the guard a Keras fit file
gets, every worker exits 0 and the run learns like the original. Can it
fail? The previous conversion fails verify's exit check on both workers."""
from __future__ import annotations

import json
from pathlib import Path

import pytest

from conftest import cli_env, run_tfdist, tf_distribute_python

pytestmark = pytest.mark.slow

SCRIPT = Path(__file__).resolve().parent / "evaluate" / "tape_then_evaluate.py"


@pytest.mark.timeout(900)
def test_a_model_evaluated_after_its_tape_loop_runs_on_two_workers(tmp_path):
    report = tmp_path / "r.json"
    res = run_tfdist(tf_distribute_python(), ["verify", "--backend", "tf-distribute", "-np", "2", "--compare",
                                              "--timeout", "300", "--report", str(report), str(SCRIPT)],
                     tmp_path, timeout=700, env=cli_env({"TF_CPP_MIN_LOG_LEVEL": "2"}))
    data = json.loads(report.read_text())
    assert res.returncode == 0 and data["result"] == "PASS", res.stdout[-3000:] + res.stderr[-3000:]
    assert data["compare"]["verdict"] == "PASS", data["compare"]
