"""A script binding ``tf`` only below its first TensorFlow import (tests/slow/late_imports/train.py),
converted and run on 2 ranks (``tfdist run``): it starts and trains on both engines. The previous
conversion stopped at start-up with ``NameError: name 'tf' is not defined`` (a held-out book's
listing, both engines)."""
from __future__ import annotations

from pathlib import Path

import pytest

from tfdist.api import convert_file

from conftest import run_tfdist, tf_distribute_python

pytestmark = pytest.mark.slow

SCRIPT = Path(__file__).resolve().parent / "late_imports" / "train.py"


@pytest.mark.timeout(600)
@pytest.mark.parametrize("backend", ["tf-distribute", "horovod"])
def test_the_converted_script_starts_and_trains(tmp_path, backend, runtime_python):
    python = tf_distribute_python() if backend == "tf-distribute" else runtime_python
    result = convert_file(str(SCRIPT), backend=backend)
    assert result.status == "converted", result.error
    converted = tmp_path / "train.py"
    converted.write_text(result.code)
    res = run_tfdist(python, ["run", "--backend", backend, "-np", "2", str(converted)], tmp_path, timeout=500)
    assert res.returncode == 0, res.stdout[-3000:] + res.stderr[-3000:]
    losses = [[float(v) for v in line.split("LOSS", 1)[1].split()[:2]] for line in res.stdout.splitlines()
              if "LOSS" in line]
    assert len(losses) == 1, res.stdout[-2000:]  # printed once, by the chief
    (first, last), = losses
    assert last < first, losses  # it trained: the loss of the last epoch below the first's
