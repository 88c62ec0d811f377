"""Keras's predict on 2 TF_CONFIG workers when the rows do not divide evenly
between them (the sixth late-picked set's VAE notebooks): converted, both
workers predict all 225 rows, each the model's own output for its row, in
order. Can it fail? The same conversion without the padding patch stops both
workers ("Shape mismatch in the collective"): asserted."""
from __future__ import annotations

import json
import re
from pathlib import Path

import pytest

from conftest import run_tfdist, tf_distribute_python
from tfdist.api import convert_file

pytestmark = pytest.mark.slow

SCRIPT = Path(__file__).resolve().parent / "predict" / "uneven_rows.py"
PATCH = '    tf.keras.Model.predict = predict_evenly(tf.keras.Model.predict)\n'


@pytest.mark.timeout(600)
def test_predict_on_rows_not_dividing_between_two_workers(tmp_path):
    python = tf_distribute_python()
    result = convert_file(str(SCRIPT), backend="tf-distribute")
    converted = result.data.decode()
    assert result.status == "converted" and PATCH in converted
    (tmp_path / "converted.py").write_text(converted)
    run = run_tfdist(python, ["run", "--backend", "tf-distribute", "-np", "2", str(tmp_path / "converted.py")],
                     tmp_path, timeout=500)
    assert run.returncode == 0, run
    found = [json.loads(m) for m in re.findall(r"^\[\d\]<stdout>:PREDICTED (.*)$", run.stdout, re.M)]
    assert len(found) == 1 and found[0]["rows"] == 225 and found[0]["gap"] < 1e-5, run.stdout[-2000:]
    (tmp_path / "unpatched.py").write_text(converted.replace(PATCH, "    pass\n"))
    wrong = run_tfdist(python, ["run", "--backend", "tf-distribute", "-np", "2", str(tmp_path / "unpatched.py")],
                       tmp_path, timeout=500)
    assert wrong.returncode != 0 and "Shape mismatch in the collective" in wrong.stdout + wrong.stderr
