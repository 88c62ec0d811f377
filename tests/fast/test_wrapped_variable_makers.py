"""A model of plain Python classes whose layers make their tf.Variables in __init__ while the
sequence holding them makes none (a held-out book's "from scratch" listing): the construction of
the sequence, with the layers made in its arguments, runs in strategy.scope() (actions/tape_scope).
The previous conversion left it outside, and the first optimizer step stopped with
``AssertionError`` (mirrored_strategy ``_update``: the variables were not mirrored)."""
from __future__ import annotations

import ast
from pathlib import Path

import pytest

from tfdist.api import convert_source

SCRIPT = Path(__file__).resolve().parents[1] / "slow" / "wrapped_variables" / "train.py"
INLINE = "model = ScratchSequential([ScratchDense(8, 16, tf.nn.relu), ScratchDense(16, 2, tf.identity)])"
VARIANTS = {
    "inline": INLINE,
    "by name": "hidden = ScratchDense(8, 16, tf.nn.relu)\n"
               "model = ScratchSequential([hidden, ScratchDense(16, 2, tf.identity)])",
    "keyword": "model = ScratchSequential(layers=[ScratchDense(8, 16, tf.nn.relu), ScratchDense(16, 2, tf.identity)])",
    "one layer read by index": INLINE,
    "keras variables": INLINE,
}


def _scoped(text: str) -> list:
    """The source of every statement inside a ``with strategy.scope():`` block."""
    tree = ast.parse(text)
    return [ast.unparse(s) for node in ast.walk(tree) if isinstance(node, ast.With)
            and "strategy.scope()" in ast.unparse(node.items[0].context_expr) for s in node.body]


@pytest.mark.parametrize("variant", sorted(VARIANTS))
def test_the_holder_and_the_layers_it_is_given_are_built_in_the_scope(variant):
    source = SCRIPT.read_text()
    assert INLINE in source
    source = source.replace(INLINE, VARIANTS[variant])
    if variant == "keras variables":  # Keras 3's own variables (the listing's Keras 3 edition)
        source = source.replace("tf.Variable(", "keras.Variable(")
    if variant == "one layer read by index":
        source = source.replace("tape.gradient(loss, model.weights)", "tape.gradient(loss, model.layers[0].weights)")
        source = source.replace("zip(gradients, model.weights)", "zip(gradients, model.layers[0].weights)")
    result = convert_source(source.encode(), "train.py", backend="tf-distribute")
    assert result.status == "converted", result.error
    scoped = _scoped(result.data.decode())
    for line in VARIANTS[variant].strip().splitlines():
        assert ast.unparse(ast.parse(line).body[0]) in scoped, (line, scoped)
    assert any(s.startswith("optimizer = ") for s in scoped), scoped


def test_a_holder_of_objects_that_make_no_variables_stays_where_it_is():
    source = SCRIPT.read_text() + "notes = ScratchSequential([str, repr])\nprint(notes(1))\n"
    result = convert_source(source.encode(), "train.py", backend="tf-distribute")
    assert "notes = ScratchSequential([str, repr])" not in _scoped(result.data.decode())
