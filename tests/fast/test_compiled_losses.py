"""A loss function given to compile() under tf.distribute (rule
compiled-losses): one that averages itself is warned with the edit (Keras 3
leaves one number undivided: N times the gradient on N replicas); one that
returns per-example values is Keras's to divide, and nothing is said."""
from __future__ import annotations

import pytest

from tfdist.api import convert_source

SRC = '''import numpy as np
import tensorflow as tf
import keras


def own_loss(y_true, y_pred):
    return {returns}


x = np.random.rand(64, 4).astype("float32")
y = x.sum(axis=1, keepdims=True)
model = keras.Sequential([keras.Input((4,)), keras.layers.Dense(1)])
model.compile(optimizer="sgd", loss=own_loss)
model.fit(x, y, batch_size=16, epochs=1)
'''


@pytest.mark.parametrize("returns,warned", [
    ("tf.reduce_mean(tf.abs(y_true - y_pred))", True),
    ("keras.ops.sum(tf.square(y_true - y_pred)) / 16.0", True),
    ("tf.reduce_mean(tf.abs(y_true - y_pred), axis=-1)", False),
    ("tf.abs(y_true - y_pred)", False),
])
def test_a_loss_function_averaging_itself_is_warned(returns, warned):
    result = convert_source(SRC.format(returns=returns).encode(), "fit.py", backend="tf-distribute")
    assert result.status == "converted", result.error
    said = [w for w in result.warnings if "returns one number" in w.message]
    assert bool(said) == warned, [w.message for w in result.warnings]
    if warned:
        assert said[0].line == 13


FACTORY = '''import numpy as np
import tensorflow as tf
import keras


def get_loss(scale):
    def mixture_loss(y_true, y_pred):
        return {returns}
    return mixture_loss


x = np.random.rand(64, 4).astype("float32")
model = keras.Sequential([keras.Input((4,)), keras.layers.Dense(1)])
{bind}model.compile(optimizer="sgd", loss={given})
model.fit(x, x.sum(axis=1, keepdims=True), batch_size=16, epochs=1)
'''


@pytest.mark.parametrize("bind, given", [
    ("", "get_loss(2.0)"), ("chosen = get_loss(2.0)\n", "chosen"), ("chosen = get_loss(scale=2.0)\n", "chosen"),
    ("", "lambda t, p: tf.reduce_mean(tf.abs(t - p)) * 2.0")],
    ids=["factory call", "name bound to it", "keyword setting", "lambda"])
@pytest.mark.parametrize("returns, warned", [("tf.reduce_mean(tf.abs(y_true - y_pred)) * scale", True),
                                             ("tf.reduce_mean(tf.abs(y_true - y_pred), axis=-1) * scale", False)])
def test_a_loss_made_by_a_factory_is_followed_to_what_it_returns(bind, given, returns, warned):
    if given.startswith("lambda"):
        given = given if warned else "lambda t, p: tf.reduce_mean(tf.abs(t - p), axis=-1)"
    src = FACTORY.format(returns=returns, bind=bind, given=given)
    result = convert_source(src.encode(), "fit.py", backend="tf-distribute")
    assert result.status == "converted", result.error
    said = [w for w in result.warnings if "returns one number" in w.message]
    assert bool(said) == warned, [w.message for w in result.warnings]
    if warned:
        assert said[0].line == src.splitlines().index(next(l for l in src.splitlines() if "model.compile" in l)) + 1
