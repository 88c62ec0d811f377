"""A scalar beside each batch (tests/slow/unbatched/dummy_target.py with
``tf.constant(0.0)`` as the dummy target, where the file has
``tf.zeros_like(v[:, :1])``): the previous conversion stopped
at the first step on every tf.distribute worker (IndexError in
get_static_batch_dim); tfdist now refuses it on tf-distribute with the line
and the edit -- a batch dimension for the dummy -- and that edit, made, trains
like the original on 2 TF_CONFIG workers. Can it fail? The refusal is
asserted on the scalar spelling; the edited script must pass verify's
checks (exit 0, identical replicas, half the steps, the same learning)."""
from __future__ import annotations

from pathlib import Path

import pytest

from conftest import tf_distribute_python, verify_passes
from tfdist.api import convert_file

pytestmark = pytest.mark.slow

SCRIPT = Path(__file__).resolve().parent / "unbatched" / "dummy_target.py"


@pytest.mark.timeout(900)
def test_the_advised_batch_dimension_trains_where_the_scalar_is_refused(tmp_path):
    scalar = tmp_path / "scalar" / "train.py"
    scalar.parent.mkdir()
    scalar.write_text(SCRIPT.read_text().replace("tf.zeros_like(v[:, :1])", "tf.constant(0.0)"))
    refused = convert_file(str(scalar), backend="tf-distribute")
    assert refused.status == "unsupported" and "Give it a batch dimension in the map" in refused.error, refused.error
    edited = SCRIPT
    verify_passes(tf_distribute_python(), "tf-distribute", ["-np", "2"], edited, tmp_path)
