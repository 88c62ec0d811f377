"""A functional model built through instance attributes, trained with fit,
then its decoder's predict on 25 rows, with tf.functions run eagerly
(tests/slow/attribute_tensors/autoencoder.py; a held-out cookbook's VAE).
The previous conversion left the encoder and decoder outside the scope
(both workers stopped in fit: "Variable ... was not created in the
distribution strategy scope"), and predict's gathering of the workers' rows
failed eagerly ("all_gather is not supported in eager mode"). `tfdist verify
--compare` on 2 TF_CONFIG workers: every worker exits 0, identical replicas,
half the steps each, the same learning. Can it fail? The previous
conversion fails the exit check on both workers."""
from __future__ import annotations

import json
from pathlib import Path

import pytest

from conftest import cli_env, run_tfdist, tf_distribute_python

pytestmark = pytest.mark.slow

SCRIPT = Path(__file__).resolve().parent / "attribute_tensors" / "autoencoder.py"


@pytest.mark.timeout(900)
def test_a_model_built_through_attributes_trains_and_predicts_on_two_workers(tmp_path):
    report = tmp_path / "r.json"
    res = run_tfdist(tf_distribute_python(), ["verify", "--backend", "tf-distribute", "-np", "2", "--compare",
                                              "--timeout", "300", "--report", str(report), str(SCRIPT)],
                     tmp_path, timeout=700, env=cli_env({"TF_CPP_MIN_LOG_LEVEL": "2"}))
    data = json.loads(report.read_text())
    assert res.returncode == 0 and data["result"] == "PASS", res.stdout[-3000:] + res.stderr[-3000:]
    assert data["compare"]["verdict"] == "PASS", data["compare"]
