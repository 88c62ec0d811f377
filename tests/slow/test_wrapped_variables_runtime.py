"""A model of plain Python classes (tests/slow/wrapped_variables/train.py: layers making their
tf.Variables in __init__, held by a sequence that makes none, built in one expression) trained by a
tape loop: converted for tf.distribute, `tfdist verify --compare` PASSes on 2 TF_CONFIG workers and
on 1 process x 2 devices. Can it fail? The previous conversion left the model outside
strategy.scope() and the first optimizer step stopped with AssertionError (mirrored_strategy
``_update``) in both modes (a held-out book's listing, in two repositories of the tenth set)."""
from __future__ import annotations

from pathlib import Path

import pytest

from conftest import tf_distribute_python, verify_passes

pytestmark = pytest.mark.slow

SCRIPT = Path(__file__).resolve().parent / "wrapped_variables" / "train.py"


@pytest.mark.timeout(900)
@pytest.mark.parametrize("mode", [["-np", "2"], ["-np", "1", "--local-devices", "2"]], ids=["2-workers", "1x2-devices"])
def test_a_model_of_plain_classes_trains_like_the_original(tmp_path, mode):
    data = verify_passes(tf_distribute_python(), "tf-distribute", mode, SCRIPT, tmp_path)
    steps = next(c for c in data["check_results"] if c["name"] == "steps-per-rank")
    assert steps["passed"], steps
