"""``optimizers.Adam(lr=0.05)`` (tests/slow/lr/ignored_lr.py): Keras ignores
``lr`` since TensorFlow 2.11 and trains at the default 0.001. tfdist scaled
the ignored ``lr`` and the converted script trained at the unscaled default
(verify: "the first fit's learning rate is not the original's 0.001 x 2",
seen on a held-out set). Now the default is written out scaled: `tfdist
verify` on 2 Horovod ranks and 2 TF_CONFIG workers reads 0.002 on every
rank, and the run learns like the original. Can it fail? The previous
conversion's rank rate, 0.001, fails the same rate check."""
from __future__ import annotations

from pathlib import Path

import pytest

from conftest import tf_distribute_python, verify_passes

pytestmark = pytest.mark.slow

SCRIPT = Path(__file__).resolve().parent / "lr" / "ignored_lr.py"


@pytest.mark.timeout(900)
@pytest.mark.parametrize("engine", ["horovod", "tf-distribute"])
def test_the_rate_an_ignored_lr_leaves_is_the_one_scaled(engine, tmp_path, runtime_python):
    python = tf_distribute_python() if engine == "tf-distribute" else runtime_python
    data = verify_passes(python, engine, ["-np", "2"], SCRIPT, tmp_path)
    rate = next(c for c in data["check_results"] if c["name"] == "learning-rate-scaled")
    assert rate["passed"], rate
    assert "learning rate 0.002 on every rank (the original's 0.001 x 2)" in rate["detail"], rate
