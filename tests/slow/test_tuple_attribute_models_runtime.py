"""Two models a method returns as a tuple, unpacked into the trainer's
attributes and trained with train_on_batch (tests/slow/tuple_models/pair.py;
a held-out semi-supervised GAN's shape, whose converted workers stopped with
"Variable ... was not created in the distribution strategy scope"). `tfdist
verify --compare` on 2 TF_CONFIG workers and 2 Horovod ranks: every process
exits 0, replicas end identical, the models learn like the original. Can it
fail? The previous code refuses the file ("no training loop found"): verify
exits non-zero."""
from __future__ import annotations

from pathlib import Path

import pytest

from conftest import tf_distribute_python, verify_passes

pytestmark = pytest.mark.slow

SCRIPT = Path(__file__).resolve().parent / "tuple_models" / "pair.py"


@pytest.mark.timeout(900)
@pytest.mark.parametrize("engine", ["tf-distribute", "horovod"])
def test_models_unpacked_into_attributes_train_like_the_original(engine, tmp_path, runtime_python):
    python = tf_distribute_python() if engine == "tf-distribute" else runtime_python
    verify_passes(python, engine, ["-np", "2"], SCRIPT, tmp_path)
