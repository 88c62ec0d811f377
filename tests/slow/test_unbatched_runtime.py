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

import json
from pathlib import Path

import pytest

from conftest import cli_env, run_tfdist, tf_distribute_python
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
    report = tmp_path / "r.json"
    res = run_tfdist(tf_distribute_python(), ["verify", "--backend", "tf-distribute", "-np", "2", "--compare",
                                              "--timeout", "300", "--report", str(report), str(edited)],
                     tmp_path, timeout=700, env=cli_env({"TF_CPP_MIN_LOG_LEVEL": "2"}))
    data = json.loads(report.read_text())
    assert res.returncode == 0 and data["result"] == "PASS", res.stdout[-3000:] + res.stderr[-3000:]
    assert data["compare"]["verdict"] == "PASS", data["compare"]
