"""A subclassed model first called on its own before its tape loop
(tests/slow/lazy_model/first_call_outside.py; a held-out GAN notebook's shape): converted, it is made
and first called in the scope, and `tfdist verify --compare` PASSes on 1 x 2 devices and on 2
TF_CONFIG workers. Can it fail? The previous conversion left the first call outside the scope: the
first step stopped ("colocate_vars_with must only be passed a variable created in this
tf.distribute.Strategy.scope()"; the held-out notebook on 1 x 2 devices, by hand)."""
from __future__ import annotations

from pathlib import Path

import pytest

from conftest import tf_distribute_python, verify_passes

pytestmark = pytest.mark.slow

SCRIPT = Path(__file__).resolve().parent / "lazy_model" / "first_call_outside.py"
MODES = [pytest.param(["-np", "1", "--local-devices", "2"], id="devices"), pytest.param(["-np", "2"], id="workers")]


@pytest.mark.timeout(900)
@pytest.mark.parametrize("mode", MODES)
def test_a_model_first_called_before_training_trains(mode, tmp_path):
    verify_passes(tf_distribute_python(), "tf-distribute", mode, SCRIPT, tmp_path)
