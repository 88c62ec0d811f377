"""``optimizers.Adam(lr=0.05)`` (tests/slow/lr/ignored_lr.py): Keras ignores
``lr`` since TensorFlow 2.11 and trains at the default 0.001. tfdist scaled
the ignored ``lr`` and the converted script trained at the unscaled default
(verify: "the first fit's learning rate is not the original's 0.001 x 2",
seen on a held-out set). Now the default is written out scaled: `tfdist
verify` on 2 Horovod ranks and 2 TF_CONFIG workers reads 0.002 on every
rank, and the run learns like the original. Can it fail? The previous
conversion's rank rate, 0.001, fails the same rate check."""
from __future__ import annotations

import json
from pathlib import Path

import pytest

from conftest import cli_env, run_tfdist, tf_distribute_python

pytestmark = pytest.mark.slow

SCRIPT = Path(__file__).resolve().parent / "lr" / "ignored_lr.py"


@pytest.mark.timeout(900)
@pytest.mark.parametrize("engine", ["horovod", "tf-distribute"])
def test_the_rate_an_ignored_lr_leaves_is_the_one_scaled(engine, tmp_path, runtime_python):
    python = tf_distribute_python() if engine == "tf-distribute" else runtime_python
    report = tmp_path / "r.json"
    res = run_tfdist(python, ["verify", "--backend", engine, "-np", "2", "--compare", "--timeout", "300",
                              "--report", str(report), str(SCRIPT)], tmp_path, timeout=700,
                     env=cli_env({"TF_CPP_MIN_LOG_LEVEL": "2"}))
    data = json.loads(report.read_text())
    assert res.returncode == 0 and data["result"] == "PASS", res.stdout[-3000:] + res.stderr[-3000:]
    rate = next(c for c in data["check_results"] if c["name"] == "learning-rate-scaled")
    assert rate["passed"], rate
    assert "learning rate 0.002 on every rank (the original's 0.001 x 2)" in rate["detail"], rate
