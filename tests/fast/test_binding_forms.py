"""Every way Python binds a name carries a functional model's tensors.

A functional model built at module level is followed back from
``keras.Model(inputs, outputs)`` through the names its layers read, so that
every layer is built in tf.distribute's replication scope; a layer left
outside it stops ``fit()`` (``colocate_vars_with must only be passed a
variable created in this tf.distribute.Strategy.scope()``, issue 39). The
same residual block is written here in every binding form that keeps its
meaning; each conversion must put every layer in the scope.
"""
from __future__ import annotations

import libcst as cst
import pytest

from tfdist.api import convert_source
from tfdist.engine.scopes import walk

TEMPLATE = '''import numpy as np
import keras
from keras import layers

inputs = keras.Input((100,))
x = layers.Dense(64, activation="relu")(inputs)
residual = x
x = layers.Dense(64, activation="relu")(x)
{residual}
outputs = layers.Dense(16)(x)
model = keras.Model(inputs, outputs)
model.compile(optimizer="adam", loss="mse")
model.fit(np.random.random((512, 100)), np.random.random((512, 16)), batch_size=32)
'''

RESIDUALS = {
    "augmented assignment": "x += residual",
    "binary operation": "x = x + residual",
    "operands swapped": "x = residual + x",
    "annotated assignment": "x: keras.KerasTensor = x + residual",
    "two targets": "x = y = x + residual",
    "walrus": "x = (z := x + residual)",
    "tuple unpacking": "x, _ = x + residual, None",
    "unary operations": "x = -(-x - residual)",
    "conditional expression": "x = x + residual if residual is not None else x",
    "a Keras layer function": "x = layers.add([x, residual])",
    "a keras.ops call": "x = keras.ops.add(x, residual)",
    "augmented on one line with another statement": "x += residual; y = 0",
    # the binding before ``x +=`` in a loop is itself (a CutMix ResNet's blocks): followed once,
    # not until Python's recursion limit (the conversion failed so)
    "augmented in a loop": "for _ in range(2):\n    x += residual",
    "augmented in a loop after a layer": "for _ in range(2):\n    x = layers.Dense(64)(x)\n    x += residual",
}


def _in_scope(module: cst.Module):
    """The statements inside ``with strategy.scope():`` blocks, and those outside."""
    inside, outside = [], []

    def visit(body, scoped):
        for stmt in body:
            if isinstance(stmt, cst.With) and any("strategy.scope" in module.code_for_node(i.item) for i in stmt.items):
                visit(stmt.body.body, True)
            elif isinstance(stmt, (cst.If, cst.For)):
                visit(stmt.body.body, scoped)
            else:
                (inside if scoped else outside).append(stmt)

    visit(module.body, False)
    return inside, outside


@pytest.mark.parametrize("form", sorted(RESIDUALS))
def test_every_layer_of_the_residual_model_is_built_in_the_scope(form):
    source = TEMPLATE.format(residual=RESIDUALS[form])
    result = convert_source(source, backend="tf-distribute")
    assert result.status == "converted", result.error
    module = cst.parse_module(result.code)
    inside, outside = _in_scope(module)
    layer_lines = [s for s in outside if any(
        isinstance(n, cst.Attribute) and n.attr.value in ("Dense", "Input") for n in walk(s))]
    assert layer_lines == [], f"{form}: built outside the scope: {[module.code_for_node(s) for s in layer_lines]}"
    assert any("Model(inputs, outputs)" in module.code_for_node(s) for s in inside)


def test_a_constructor_setting_is_not_followed_as_a_tensor():
    """``Input(shape)`` reads ``width`` as a setting: what computes it (from
    the data Keras loads) builds no layer and stays where it is."""
    source = TEMPLATE.replace('inputs = keras.Input((100,))', '(data, _), _ = keras.datasets.mnist.load_data()\n'
                              'width = data.shape[1] * data.shape[2]\ninputs = keras.Input((width,))').format(
        residual="x += residual")
    result = convert_source(source, backend="tf-distribute")
    inside, outside = _in_scope(cst.parse_module(result.code))
    assert any("keras.datasets.mnist.load_data()" in cst.Module([]).code_for_node(s) for s in outside)
    assert any("width = data.shape" in cst.Module([]).code_for_node(s) for s in outside)
