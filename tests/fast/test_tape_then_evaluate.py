"""A model trained in a tape loop, then compiled and evaluated with Keras's
own loop (a held-out cookbook's shape): Keras 3's evaluate() under
MultiWorkerMirroredStrategy hands the strategy's reduce a nested batch it
rejects (keras-team/keras#20585), so both workers stopped after training
("Attempt to convert a value (PerReplica...)"). The file now gets the same
guard as a Keras fit file. Each spelling is one program."""
from __future__ import annotations

from pathlib import Path

import pytest

from tfdist.api import convert_file

SCRIPT = Path(__file__).resolve().parents[1] / "slow" / "evaluate" / "tape_then_evaluate.py"
GUARD = "def reduce_for_keras3(reduce):"


def _convert(tmp_path, src):
    path = tmp_path / "train.py"
    path.write_text(src)
    return convert_file(path, backend="tf-distribute")


@pytest.mark.parametrize("spelling", ["as_written", "keyword_data", "in_a_function"])
def test_a_tape_file_that_evaluates_gets_the_keras3_guard(tmp_path, spelling):
    src = SCRIPT.read_text()
    if spelling == "keyword_data":
        src = src.replace("model.evaluate(x_test, y_test)", "model.evaluate(x=x_test, y=y_test, verbose=0)")
    elif spelling == "in_a_function":
        src = src.replace("print(model.evaluate(x_test, y_test))",
                          "def report(m):\n    return m.evaluate(x_test, y_test)\n\n\nprint(report(model))")
    r = _convert(tmp_path, src)
    assert r.status == "converted", r.error
    assert GUARD in r.code and "strategy.reduce = reduce_for_keras3(strategy.reduce)" in r.code


def test_a_tape_file_that_does_not_evaluate_gets_no_guard(tmp_path):
    src = SCRIPT.read_text().replace(
        'model.compile(loss="categorical_crossentropy", optimizer=optimizer, metrics=["accuracy"])\n', "").replace(
        "print(model.evaluate(x_test, y_test))", "print(float(loss))")
    r = _convert(tmp_path, src)
    assert r.status == "converted", r.error
    assert GUARD not in r.code
