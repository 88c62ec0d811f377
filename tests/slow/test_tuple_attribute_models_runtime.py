"""Two models a method returns as a tuple, unpacked into the trainer's
attributes and trained with train_on_batch (tests/slow/tuple_models/pair.py;
a held-out semi-supervised GAN's shape, whose converted workers stopped with
"Variable ... was not created in the distribution strategy scope"). `tfdist
verify --compare` on 2 TF_CONFIG workers and 2 Horovod ranks: every process
exits 0, replicas end identical, the models learn like the original. Can it
fail? The previous code refuses the file ("no training loop found"): verify
exits non-zero."""
from __future__ import annotations

import json
from pathlib import Path

import pytest

from conftest import cli_env, run_tfdist, tf_distribute_python

pytestmark = pytest.mark.slow

SCRIPT = Path(__file__).resolve().parent / "tuple_models" / "pair.py"


@pytest.mark.timeout(900)
@pytest.mark.parametrize("engine", ["tf-distribute", "horovod"])
def test_models_unpacked_into_attributes_train_like_the_original(engine, tmp_path, runtime_python):
    python = tf_distribute_python() if engine == "tf-distribute" else runtime_python
    report = tmp_path / "r.json"
    res = run_tfdist(python, ["verify", "--backend", engine, "-np", "2", "--compare", "--timeout", "300",
                              "--report", str(report), str(SCRIPT)], tmp_path, timeout=700,
                     env=cli_env({"TF_CPP_MIN_LOG_LEVEL": "2"}))
    data = json.loads(report.read_text())
    assert res.returncode == 0 and data["result"] == "PASS", res.stdout[-3000:] + res.stderr[-3000:]
    assert data["compare"]["verdict"] == "PASS", data["compare"]
