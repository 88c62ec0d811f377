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

from pathlib import Path

import pytest

from conftest import tf_distribute_python, verify_passes

pytestmark = pytest.mark.slow

SCRIPT = Path(__file__).resolve().parent / "attribute_tensors" / "autoencoder.py"


@pytest.mark.timeout(900)
def test_a_model_built_through_attributes_trains_and_predicts_on_two_workers(tmp_path):
    verify_passes(tf_distribute_python(), "tf-distribute", ["-np", "2"], SCRIPT, tmp_path)
