"""An added keyword argument follows the layout of the call's own arguments
(issue 39, point 5): on the last argument's line when the call is written on
one line or wrapped where a line filled up; on a line of its own, indented like
the others, when the call has one argument per line or its ")" on a line of its
own. Comments stay on the lines they were written on, and what stood before
")" (a trailing comma, a line break) stays there."""
import libcst as cst
import pytest

from tfdist.api import convert_source
from tfdist.facts.syntax import append_arg, kwarg

CASES = [
    # one line
    ("f(a, b)", "f(a, b, k=1)"),
    ("f(a, b,)", "f(a, b, k=1,)"),
    ("f()", "f(k=1)"),
    ("f(a )", "f(a, k=1 )"),
    # one argument per line, ")" hugging the last
    ("f(a,\n  b)", "f(a,\n  b,\n  k=1)"),
    # ")" on a line of its own, without a trailing comma
    ("f(\n    a, b,\n    c\n)", "f(\n    a, b,\n    c,\n    k=1\n)"),
    ("f(\n    a\n)", "f(\n    a,\n    k=1\n)"),
    # ")" on a line of its own, after a trailing comma
    ("f(\n    a,\n    b,\n)", "f(\n    a,\n    b,\n    k=1,\n)"),
    ("f(\n    a,\n)", "f(\n    a,\n    k=1,\n)"),
    # wrapped where the line filled up: the last line takes it
    ("f(a, b,\n  c)", "f(a, b,\n  c, k=1)"),
    ("f(a, b, \\\n  c)", "f(a, b, \\\n  c, k=1)"),
    # comments stay where they were
    ("f(\n    a,  # first\n    b,  # second\n)", "f(\n    a,  # first\n    b,  # second\n    k=1,\n)"),
    ("f(a,  # first\n  b  # second\n  )", "f(a,  # first\n  b,  # second\n  k=1\n  )"),
    ("f(a, b  # note\n  )", "f(a, b,  # note\n  k=1\n  )"),
    ("f(  # why\n    a,\n)", "f(  # why\n    a,\n    k=1,\n)"),
]


@pytest.mark.parametrize("before,after", CASES)
def test_added_keyword_follows_the_call_layout(before, after):
    call = cst.parse_expression(before)
    assert cst.Module([]).code_for_node(append_arg(call, kwarg("k", cst.Integer("1")))) == after


@pytest.mark.parametrize("before,after", CASES)
def test_a_second_keyword_follows_the_first(before, after):
    """Rules add several keywords to one call, one after the other: each follows the same layout."""
    call = append_arg(cst.parse_expression(before), kwarg("k", cst.Integer("1")))
    twice = cst.Module([]).code_for_node(append_arg(call, kwarg("m", cst.Integer("2"))))
    expected = cst.Module([]).code_for_node(append_arg(cst.parse_expression(after), kwarg("m", cst.Integer("2"))))
    assert twice == expected and "m=2" in twice and twice.count("#") == before.count("#")


SCRIPT = '''import numpy as np
import keras
from keras import layers

x_train = np.random.random((512, 100))
y_train = np.random.random((512, 16))
model = keras.Sequential([layers.Dense(64, activation="relu"), layers.Dense(16)])
model.compile(optimizer="adam", loss="mse")
history = model.fit(
    x_train, y_train,
    validation_split=0.2
)
model.fit(x_train,
          y_train,
          validation_split=0.2)  # held out
'''


@pytest.mark.parametrize("backend", ["horovod", "tf-distribute"])
def test_no_added_argument_starts_a_line_at_column_0(backend):
    """The issue's shape: ``validation_split=0.2, `` then ``verbose=...`` at column 0."""
    result = convert_source(SCRIPT.encode(), "train.py", backend=backend)
    assert result.status == "converted", result.error
    lines = result.data.decode().splitlines()
    fit = lines.index("history = model.fit(")
    added = [line for line in lines[fit:] if line.lstrip().startswith(("verbose=", "callbacks=", "batch_size="))]
    assert added, lines[fit:]
    assert all(line.startswith(("    ", "          ")) for line in added), added
    assert not any(line.rstrip() != line for line in lines[fit:]), "a line ends in blanks"
    assert lines[-1] == lines[-1].split("#")[0] + "# held out"
    assert lines[lines.index(")") - 1].startswith("    ") and lines[lines.index(")") - 1].rstrip(",") == lines[lines.index(")") - 1]
