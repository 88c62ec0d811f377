"""A tf.function step called once per batch, the batch read after it
(tests/slow/single_step/step_then_batch.py; a held-out book's shape). The
previous conversion wrapped the call in a plain function run on the
replicas, and every rank stopped at its first step ("merge_call called while
defining a new graph or a tf.function"). Now the step itself is run on the
replicas: `tfdist verify --compare` PASSes on 1 process x 2 devices and on 2
TF_CONFIG workers (exit 0, identical replicas, half the steps on disjoint
rows, the same learning). Can it fail? The previous conversion fails the
exit check."""
from __future__ import annotations

from pathlib import Path

import pytest

from conftest import tf_distribute_python, verify_passes
from tfdist.api import convert_file

pytestmark = pytest.mark.slow

SCRIPT = Path(__file__).resolve().parent / "single_step" / "step_then_batch.py"
MODES = [pytest.param(["-np", "1", "--local-devices", "2"], id="devices"), pytest.param(["-np", "2"], id="workers")]


@pytest.mark.timeout(900)
@pytest.mark.parametrize("mode", MODES)
def test_a_tf_function_step_called_alone_runs_on_the_replicas(mode, tmp_path):
    converted = convert_file(str(SCRIPT), backend="tf-distribute")
    assert "loss_value = run_on_replicas(train_step, features, labels)" in converted.code
    verify_passes(tf_distribute_python(), "tf-distribute", mode, SCRIPT, tmp_path)
