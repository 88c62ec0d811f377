"""verify's steps check on a divided dataset whose shares end in partial
batches: 512 rows in batches of 200 make 3 steps a pass, each worker's 256
rows 2, so the workers take more than half the original's steps. The check
read that as undivided work and FAILed a correct conversion (a held-out
set's tape loops); it now passes on the rows each rank fed, half the
original's. Can it fail? A conversion that does not divide the data feeds
every rank all the rows (the fast tier's mutants of the same check)."""
from __future__ import annotations

import json
from pathlib import Path

import pytest

from conftest import cli_env, run_tfdist, tf_distribute_python

pytestmark = pytest.mark.slow

SCRIPT = Path(__file__).resolve().parent / "steps" / "tape_partial_batches.py"


@pytest.mark.timeout(900)
def test_a_tape_loop_whose_shares_end_in_partial_batches_passes_on_two_workers(tmp_path):
    report = tmp_path / "r.json"
    res = run_tfdist(tf_distribute_python(), ["verify", "--backend", "tf-distribute", "-np", "2", "--compare",
                                              "--timeout", "300", "--report", str(report), str(SCRIPT)],
                     tmp_path, timeout=700, env=cli_env({"TF_CPP_MIN_LOG_LEVEL": "2"}))
    data = json.loads(report.read_text())
    assert res.returncode == 0 and data["result"] == "PASS", res.stdout[-3000:] + res.stderr[-3000:]
    steps = next(c for c in data["check_results"] if c["name"] == "steps-per-rank")
    assert steps["passed"] and steps["measured"]["original"] == 30 and set(steps["measured"]["ranks"].values()) == {20}
    assert steps["measured"]["rows"]["original"] == 5120
    assert set(steps["measured"]["rows"]["ranks"].values()) == {2560}
