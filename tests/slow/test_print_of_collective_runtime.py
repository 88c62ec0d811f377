"""A print holding a Keras model's fit, evaluate or predict (tests/slow/print_collectives/train.py),
converted and run on 2 ranks without the probe (``tfdist run``): every rank trains, evaluates and
predicts (collectives under tf.distribute; fit under Horovod), and each line is printed once, by
rank 0. Can it fail? The previous conversion left these prints alone on tf.distribute (each line
came from both workers) and left the fit inside a print unguarded on Horovod."""
from __future__ import annotations

import re
from pathlib import Path

import pytest

from tfdist.api import convert_file

from conftest import run_tfdist, tf_distribute_python

pytestmark = pytest.mark.slow

SCRIPT = Path(__file__).resolve().parent / "print_collectives" / "train.py"


@pytest.mark.timeout(600)
@pytest.mark.parametrize("backend", ["tf-distribute", "horovod"])
def test_each_line_is_printed_once_by_rank_0(tmp_path, backend, runtime_python):
    python = tf_distribute_python() if backend == "tf-distribute" else runtime_python
    result = convert_file(str(SCRIPT), backend=backend)
    assert result.status == "converted", result.error
    assert "fit_result = model.fit(" in result.code, result.code
    converted = tmp_path / "train.py"
    converted.write_text(result.code)
    res = run_tfdist(python, ["run", "--backend", backend, "-np", "2", str(converted)], tmp_path, timeout=500)
    assert res.returncode == 0, res.stdout[-3000:] + res.stderr[-3000:]
    for tag in ("FIT", "EVAL", "PRED"):
        lines = [line for line in res.stdout.splitlines() if re.search(rf"\b{tag}\b", line)]
        assert len(lines) == 1, (tag, lines, res.stdout[-2000:])
        assert re.match(r"\[0\]<stdout>:", lines[0]), lines
    fit = next(line for line in res.stdout.splitlines() if "FIT last loss" in line)
    assert float(fit.rsplit(" ", 1)[1]) < 0.5, fit  # it trained: the mean target is about 2
    assert "PRED rows 64" in res.stdout
