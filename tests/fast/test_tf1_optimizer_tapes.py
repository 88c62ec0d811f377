"""A GradientTape loop whose gradients a TF1 optimizer applies in eager TF2
code (``tf.compat.v1.train.MomentumOptimizer``): refused on every engine
with the line and the edit -- it was reported as "no training loop" (and in
a tree copied unchanged as a helper module) because a TF1 optimizer's apply
is no TF2 optimizer step. Spellings vary: the module alias, the optimizer
held by a ``self`` attribute, the gradients inline, a ``global_step``
argument. A Keras optimizer in the same loop still converts."""
from __future__ import annotations

import dataclasses
import textwrap

import pytest

from tfdist.api import convert_source
from tfdist.options import Options

LOOP = textwrap.dedent("""\
    import numpy as np
    import tensorflow as tf

    x = np.random.rand(256, 4).astype("float32")
    y = np.random.rand(256, 1).astype("float32")
    ds = tf.data.Dataset.from_tensor_slices((x, y)).batch(32)
    model = tf.keras.Sequential([tf.keras.layers.Dense(1)])
    optimizer = OPTIMIZER
    for epoch in range(3):
        for bx, by in ds:
            with tf.GradientTape() as tape:
                loss = tf.reduce_mean(tf.square(model(bx) - by))
            grads = tape.gradient(loss, model.trainable_variables)
            optimizer.apply_gradients(zip(grads, model.trainable_variables))
    model.save_weights("w.weights.h5")
    """)

CLASS = textwrap.dedent("""\
    import tensorflow.compat.v1 as tf1
    import tensorflow as tf

    class Trainer:
        def __init__(self, model):
            self.model = model
            self.opt = tf1.train.AdamOptimizer(learning_rate=1e-3)

        def step(self, bx, by):
            with tf.GradientTape() as g:
                loss = tf.reduce_mean(tf.square(self.model(bx) - by))
            self.opt.apply_gradients(zip(g.gradient(loss, self.model.trainable_variables),
                                         self.model.trainable_variables),
                                     global_step=tf1.train.get_or_create_global_step())

    trainer = Trainer(tf.keras.Sequential([tf.keras.layers.Dense(1)]))
    for bx, by in tf.data.Dataset.from_tensor_slices((tf.zeros([64, 4]), tf.zeros([64, 1]))).batch(8):
        trainer.step(bx, by)
    """)

ENGINES = ["horovod", "tf-distribute"]


@pytest.mark.parametrize("backend", ENGINES)
@pytest.mark.parametrize("optimizer", ["tf.compat.v1.train.MomentumOptimizer(0.01, momentum=0.9)",
                                       "tf.train.GradientDescentOptimizer(0.1)"])
def test_a_tf1_optimizer_in_a_tape_loop_is_refused_with_the_line_and_the_edit(backend, optimizer):
    result = convert_source(LOOP.replace("OPTIMIZER", optimizer).encode(), "train.py", backend=backend)
    assert result.status == "unsupported"
    assert result.error_line == 14, (result.error_line, result.error)
    assert "GradientTape at line 11" in result.error and "TF1 optimizer" in result.error
    assert "tf.keras.optimizers.SGD(learning_rate, momentum=m)" in result.error


@pytest.mark.parametrize("backend", ENGINES)
def test_through_a_self_attribute_and_an_alias(backend):
    result = convert_source(CLASS.encode(), "train.py", backend=backend)
    assert result.status == "unsupported", result.status
    assert result.error_line == 12 and "GradientTape at line 10" in result.error, (result.error_line, result.error)


def test_under_parameter_servers_too():
    result = convert_source(LOOP.replace("OPTIMIZER", "tf.compat.v1.train.AdamOptimizer()").encode(), "train.py",
                            backend=dataclasses.replace(Options.of("tf-distribute"), strategy="parameter-server"))
    assert result.status == "unsupported" and "TF1 optimizer" in result.error, result.error


@pytest.mark.parametrize("backend", ENGINES)
def test_a_keras_optimizer_in_the_same_loop_converts(backend):
    result = convert_source(LOOP.replace("OPTIMIZER", "tf.keras.optimizers.SGD(0.01, momentum=0.9)").encode(),
                            "train.py", backend=backend)
    assert result.status == "converted", result.error


def test_a_tf1_optimizer_with_no_tape_is_not_this_refusal():
    source = LOOP.replace("OPTIMIZER", "tf.compat.v1.train.AdamOptimizer()").replace(
        "optimizer.apply_gradients(zip(grads, model.trainable_variables))", "print(grads)")
    result = convert_source(source.encode(), "train.py", backend="tf-distribute")
    assert "TF1 optimizer" not in (result.error or "")
