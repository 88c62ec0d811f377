"""A tape loop, then the model compiled and evaluated with Keras's own loop
(tests/slow/evaluate/tape_then_evaluate.py, a held-out cookbook's shape),
on 2 TF_CONFIG workers under Keras 3: the previous conversion trained, then
both workers stopped in evaluate() ("Attempt to convert a value
(PerReplica...)", keras-team/keras#20585). With the guard a Keras fit file
gets, every worker exits 0 and the run learns like the original. Can it
fail? The previous conversion fails verify's exit check on both workers."""
from __future__ import annotations

from pathlib import Path

import pytest

from conftest import tf_distribute_python, verify_passes

pytestmark = pytest.mark.slow

SCRIPT = Path(__file__).resolve().parent / "evaluate" / "tape_then_evaluate.py"


@pytest.mark.timeout(900)
def test_a_model_evaluated_after_its_tape_loop_runs_on_two_workers(tmp_path):
    verify_passes(tf_distribute_python(), "tf-distribute", ["-np", "2"], SCRIPT, tmp_path)
