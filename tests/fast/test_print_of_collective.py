"""Console output holding a Keras model's fit / evaluate / predict (actions/guards.hoist_and_guard).

Under tf.distribute, evaluate and predict gather across the workers and fit trains on every
one: ``print("test", model.evaluate(x, y))`` cannot go under the chief's guard whole (the other
workers would never join the collective), and left alone it prints once per worker. The call
now runs on every rank first, bound to a new name, and the print of that name on the chief
only. Under Horovod, evaluate and predict run no collective (the print is guarded whole, as
before) and fit does (hoisted). Shapes where moving the call first could change what runs, or
where another call in the output may run a collective, are left exactly as they were.
"""
from __future__ import annotations

import textwrap

import pytest

from tfdist.api import convert_source

PRELUDE = textwrap.dedent('''\
    import time

    import numpy as np
    import tensorflow as tf

    x = np.random.rand(64, 4).astype("float32")
    y = np.random.rand(64, 1).astype("float32")
    model = tf.keras.Sequential([tf.keras.Input((4,)), tf.keras.layers.Dense(1)])
    model.compile(optimizer="sgd", loss="mse", metrics=["mae"])
    model.fit(x, y, epochs=1)
    ''')
CHIEF = {"tf-distribute": "strategy.extended.should_checkpoint", "horovod": "hvd.rank() == 0"}
TFD = "tf-distribute"
HVD = "horovod"


def _tail(snippet: str, backend: str) -> str:
    """The converted text after the prelude's fit line."""
    result = convert_source((PRELUDE + snippet).encode(), "script.py", backend=backend)
    assert result.status == "converted", (result.error, result.error_line)
    return result.data.decode().split("model.fit(", 1)[1].split("\n", 1)[1]


def _lines(text: str) -> list:
    return [line for line in text.splitlines() if line.strip()]


@pytest.mark.parametrize("backend", [TFD, HVD])
def test_evaluate_in_a_print_runs_everywhere_and_prints_once(backend):
    got = _lines(_tail('print("test mae", model.evaluate(x, y, verbose=0))\n', backend))
    chief = CHIEF[backend]
    if backend == TFD:
        assert got == ["evaluate_result = model.evaluate(x, y, verbose=0)",
                       f"if {chief}:",
                       '    print("test mae", evaluate_result)'], got
    else:  # no collective in Horovod's evaluate: the print is guarded whole, as it was
        assert got == [f"if {chief}:", '    print("test mae", model.evaluate(x, y, verbose=0))'], got


@pytest.mark.parametrize("backend", [TFD, HVD])
def test_fit_in_a_print_trains_everywhere_on_both_engines(backend):
    got = _lines(_tail('print("last loss", model.fit(x, y, epochs=2, verbose=0).history["loss"][-1])\n', backend))
    assert got[0].startswith("fit_result = model.fit(x"), got
    assert got[1:] == [f"if {CHIEF[backend]}:", '    print("last loss", fit_result.history["loss"][-1])'], got


def test_an_f_string_and_a_name_in_use_and_a_function_body():
    snippet = textwrap.dedent('''\
        evaluate_result = 3
        print(f"Test MAE: {model.evaluate(x, y, verbose=0)[1]:.2f}", evaluate_result)
        def report(m):
            print("rows", len(x), m.predict(x, verbose=0).shape)
        report(model)
        ''')
    got = _lines(_tail(snippet, TFD))
    chief = CHIEF[TFD]
    assert got[:4] == ["evaluate_result = 3",
                       "_evaluate_result = model.evaluate(x, y, verbose=0)",
                       f"if {chief}:",
                       '    print(f"Test MAE: {_evaluate_result[1]:.2f}", evaluate_result)'], got
    assert got[4:9] == ["def report(m):",
                        "    predict_result = m.predict(x, verbose=0)",
                        f"    if {chief}:",
                        '        print("rows", len(x), predict_result.shape)',
                        "report(model)"], got


@pytest.mark.parametrize("snippet, why", [
    ('print(time.time(), model.evaluate(x, y, verbose=0))\n', "a call with effects runs before evaluate"),
    ('print(model.evaluate(x, y, verbose=0), model.predict(x, verbose=0))\n', "two collectives"),
    ('print(model.evaluate(x, y, verbose=0)) if True else None\n', "not a print statement alone"),
    ('print("n", (n := model.evaluate(x, y, verbose=0)))\n', "a walrus binds in the output"),
])
def test_shapes_where_moving_the_call_could_change_what_runs_are_left_alone(snippet, why):
    got = _tail(snippet, TFD)
    assert got.startswith(snippet.rstrip("\n").split("\n")[0]), (why, got)
    assert "_result" not in got, (why, got)


def test_each_hoist_is_reported_on_its_line():
    snippet = 'print("test mae", model.evaluate(x, y, verbose=0))\n'
    result = convert_source((PRELUDE + snippet).encode(), "script.py", backend=TFD)
    line = PRELUDE.count("\n") + 1
    messages = [f.message for f in result.changes if f.line == line and f.rule == "rank0-io"]
    assert messages == ["console output on rank 0 only; model.evaluate() first runs on every rank, its result "
                        "bound to evaluate_result"], [(f.line, f.rule, f.message) for f in result.changes]
