"""Custom train_step losses under --backend tf-distribute, followed by what
they are bound to (shapes met in public Keras 3 examples, written here
anew): each case converts and divides the loss exactly once -- or keeps a
loss Keras already divided -- and the converted code is valid Python."""
from __future__ import annotations

import ast
import textwrap

import pytest

from tfdist.api import convert_source

TRAINER = '''import keras
import tensorflow as tf
{helpers}

class Trainer(keras.Model):
    def __init__(self, net, weight=4.0):
        super().__init__()
        self.net = net
        self.weight = weight
        self.tracker = keras.metrics.Mean(name="loss")
{init}{compile}
    def call(self, x):
        return self.net(x)

    def train_step(self, data):
        x, y = data
{before}
        with tf.GradientTape() as tape:
            pred = self.net(x, training=True)
{body}
        grads = tape.gradient(loss, self.net.trainable_variables)
{after}
        self.optimizer.apply_gradients(zip(grads, self.net.trainable_variables))
        self.tracker.update_state({reported})
        return {{"loss": self.tracker.result()}}


x = tf.random.normal([64, 4])
y = tf.reduce_sum(x, axis=1, keepdims=True)
model = Trainer(keras.Sequential([keras.Input((4,)), keras.layers.Dense(1)]))
{setup}model.compile({arguments})
model.fit(x, y, batch_size=16, epochs=1)
'''
HANDED = '''
    def compile(self, optimizer, loss_fn):
        super().compile(optimizer=optimizer)
        self.loss_fn = loss_fn
'''
DIVIDED = "/ strategy.num_replicas_in_sync"


def _convert(body, *, init="", compile="", helpers="", before="", after="", reported="loss", setup="",
             arguments='optimizer="sgd", loss="mse"'):
    ind = lambda text, n: textwrap.indent(textwrap.dedent(text).strip("\n"), " " * n) if text else ""  # noqa: E731
    src = TRAINER.format(init=ind(init, 8) + "\n" if init else "", compile=compile, helpers=textwrap.dedent(helpers), before=ind(before, 8),
                         body=ind(body, 12), after=ind(after, 8), reported=reported, setup=textwrap.dedent(setup),
                         arguments=arguments).replace("\n\n\n\n", "\n\n\n")
    result = convert_source(src.encode(), "trainer.py", backend="tf-distribute")
    assert result.status == "converted", result.error
    text = result.data.decode()
    ast.parse(text)
    return text


def test_a_loss_object_named_where_the_models_compile_is_called_is_followed():
    """``loss_fn = keras.losses.MeanSquaredError()`` then ``model.compile(loss_fn=loss_fn)``
    (the object reaches ``self.loss_fn`` through a name and a parameter): Keras divides it."""
    text = _convert("loss = self.loss_fn(y, pred)", compile=HANDED, setup="loss_fn = keras.losses.MeanSquaredError()\n",
                    arguments='optimizer="sgd", loss_fn=loss_fn')
    assert DIVIDED not in text and "scaled_loss = loss\n" in text


def test_a_loss_summed_from_zero_in_a_loop_keeps_the_kind_of_its_terms():
    """``loss = 0.0`` then ``loss += self.loss_fn(...)`` per feature map, scaled by a weight
    read by index: a sum of values Keras divides; the zero adds nothing of either kind. The
    binding before the tape (``loss = 0.0``) is not a read to multiply back."""
    text = _convert('''
        for i in range(2):
            loss += self.weights_[i] * self.loss_fn(y, pred * (i + 1))
        loss = self.weight * loss
    ''', compile=HANDED, before="loss = 0.0", setup="loss_fn = keras.losses.MeanSquaredError()\n",
        arguments='optimizer="sgd", loss_fn=loss_fn')
    assert DIVIDED not in text
    assert "        loss = 0.0\n" in text


def test_a_loss_scaled_for_mixed_precision_and_not_reported_is_kept():
    """``loss = self.compute_loss(...)``, then ``if mixed: loss =
    self.optimizer.get_scaled_loss(loss)``: two bindings of a value Keras divides, none
    of them reported: the gradient is kept as Keras divides it."""
    text = _convert('''
        loss = self.compute_loss(x, y, pred)
        if self.mixed:
            loss = self.optimizer.get_scaled_loss(loss)
    ''', after='''
        if self.mixed:
            grads = self.optimizer.get_unscaled_gradients(grads)
    ''', reported="pred", setup="model.mixed = False\n")
    assert DIVIDED not in text
    assert "gradient of loss kept" not in text  # (the message is a finding, not code)


@pytest.mark.parametrize("reduction,divided", [("none", True), ("sum_over_batch_size", False)])
def test_compiled_loss_with_no_reduction_is_the_steps_own_mean(reduction, divided):
    """``compile(loss=keras.losses.MeanSquaredError(reduction="none"))`` then
    ``tf.reduce_mean(self.compiled_loss(...))``: Keras 3 returns the per-example values
    undivided (measured: Keras 3.15, MirroredStrategy over 2 devices), so the step's mean is
    divided by the conversion; with a mean reduction the compiled loss is divided already."""
    body = ("loss = tf.reduce_mean(self.compute_loss(x, y, pred))" if reduction == "none"
            else "loss = self.compute_loss(x, y, pred)")
    text = _convert(body, arguments=f'optimizer="sgd", loss=keras.losses.MeanSquaredError(reduction="{reduction}")')
    assert (text.count(DIVIDED) == 1) == divided, text


def test_a_mean_of_its_own_added_to_a_divided_loss_is_divided_itself():
    """``loss = self.compute_loss(...) + 0.1 * tf.reduce_mean(tf.abs(pred))``: Keras
    divides the first term; the step's own mean is divided where it is added, once."""
    text = _convert("loss = self.compute_loss(x, y, pred) + 0.1 * tf.reduce_mean(tf.abs(pred))")
    assert text.count(DIVIDED) == 1
    assert "0.1 * tf.reduce_mean(tf.abs(pred)) / strategy.num_replicas_in_sync" in text


LOSS_CLASS = '''
class Own(keras.losses.Loss):
    def __init__(self, **kwargs):
        super().__init__(**kwargs)
        self.mae = keras.losses.MeanAbsoluteError()

    def call(self, y_true, y_pred):
{returns}
'''


@pytest.mark.parametrize("returns,divided", [
    # one number of the class's own: Keras 3's reduction returns a scalar as it is (not divided)
    ("return tf.reduce_sum(tf.square(y_true - y_pred)) / 64.0", True),
    ("total = 0.0\nfor k in range(2):\n    total += tf.reduce_mean(tf.abs(y_true - y_pred))\nreturn total", True),
    # per-example values: Keras's mean reduction divides them
    ("return tf.reduce_mean(tf.square(y_true - y_pred), axis=-1)", False),
    # a number made of Loss objects' values, divided by them already
    ("return self.mae(y_true, y_pred) + 0.5 * self.mae(y_true, 2.0 * y_pred)", False),
])
def test_a_loss_subclass_is_divided_as_keras_reduces_what_its_call_returns(returns, divided):
    helpers = LOSS_CLASS.format(returns=textwrap.indent(returns, " " * 8))
    text = _convert("loss = self.own(y, pred)", helpers=helpers, init="self.own = Own()")
    assert (text.count(DIVIDED) == 1) == divided, text


def test_a_weight_read_from_compiles_keyword_arguments_is_followed():
    """``self.weights_ = kwargs.pop("weights_", self.weights_)`` in a compile override, given
    ``compile(weights_={"mse": 10})``: a dict of numbers, the default the constructor's; the
    step's mean weighted by it is divided once (a StyleGAN's loss weights)."""
    compile = '''
    def compile(self, *args, **kwargs):
        self.weights_ = kwargs.pop("weights_", self.weights_)
        super().compile(*args, **kwargs)
'''
    text = _convert('loss = tf.reduce_mean(tf.square(pred - y)) * self.weights_["mse"]', compile=compile,
                    init='self.weights_ = {"mse": 1.0}', arguments='optimizer="sgd", weights_={"mse": 10.0}')
    assert text.count(DIVIDED) == 1, text
