"""A GAN whose optimizers are constructor keywords made attributes by
``self.__dict__.update(kwargs)``, its gradients returned by one method and applied by its own
``apply_gradients`` (tests/fast/fixtures/gradient_tape/gan_attributes_from_kwargs, the shape of a
held-out set's WGAN notebooks): converted, `tfdist verify --compare` PASSes on 2 TF_CONFIG workers
(identical replicas, half the steps of each optimizer on disjoint rows, the same learning) and on
2 Horovod ranks. Can it fail? The previous code found no training loop: verify stops with
"nothing to convert"."""
from __future__ import annotations

from pathlib import Path

import pytest

from conftest import tf_distribute_python, verify_passes

pytestmark = pytest.mark.slow

SCRIPT = Path(__file__).resolve().parents[1] / "fast" / "fixtures" / "gradient_tape" / "gan_attributes_from_kwargs" / "input.py"


@pytest.mark.timeout(900)
@pytest.mark.parametrize("engine", ["tf-distribute", "horovod"])
def test_a_gan_configured_by_its_keywords_trains_distributed(engine, tmp_path, runtime_python):
    python = tf_distribute_python() if engine == "tf-distribute" else runtime_python
    data = verify_passes(python, engine, ["-np", "2"], SCRIPT, tmp_path)
    steps = next(c for c in data["check_results"] if c["name"] == "steps-per-rank")
    assert steps["passed"], steps
