"""Attributes a script sets on an object it made (``model.optimizer =
optimizers.Adam(0.01)``, ``model.loss_func = losses.BinaryCrossentropy()``,
eat_tensorflow2_in_30_days' shape) are followed to what they are bound to
wherever the object goes: a parameter it is passed as, a function that
builds and returns it, a global read in the step. The optimizer's rate is
scaled and the loss's reduction known on both engines, with no warning; an
attribute set on another object is not mistaken for it."""
from __future__ import annotations

import textwrap

import pytest

from tfdist.api import convert_source

BUILD_HERE = """
model = models.Sequential([layers.Dense(1, activation="sigmoid")])
model.optimizer = optimizers.Adam(learning_rate=0.01)
model.loss_func = losses.BinaryCrossentropy()
"""
BUILD_IN_FUNCTION = """

def create_model():
    net = models.Sequential([layers.Dense(1, activation="sigmoid")])
    net.optimizer = optimizers.Adam(learning_rate=0.01)
    net.loss_func = losses.BinaryCrossentropy()
    return net


model = create_model()
"""
STEP_WITH_PARAMETER = """

@tf.function
def train_step(model, features, labels):
    with tf.GradientTape() as tape:
        loss = model.loss_func(labels, model(features, training=True))
    gradients = tape.gradient(loss, model.trainable_variables)
    model.optimizer.apply_gradients(zip(gradients, model.trainable_variables))


for epoch in range(3):
    for features, labels in ds_train:
        train_step(model, features, labels)
"""
STEP_ON_GLOBAL = """

@tf.function
def train_step(features, labels):
    with tf.GradientTape() as tape:
        loss = model.loss_func(labels, model(features, training=True))
    gradients = tape.gradient(loss, model.trainable_variables)
    model.optimizer.apply_gradients(zip(gradients, model.trainable_variables))


for epoch in range(3):
    for features, labels in ds_train:
        train_step(features, labels)
"""
HEAD = """import numpy as np
import tensorflow as tf
from tensorflow.keras import models, layers, losses, optimizers

X = np.random.rand(256, 2).astype("float32")
Y = (X.sum(axis=1, keepdims=True) > 1).astype("float32")
ds_train = tf.data.Dataset.from_tensor_slices((X, Y)).shuffle(256, seed=2).batch(16)
"""


@pytest.mark.parametrize("backend", ["horovod", "tf-distribute"])
@pytest.mark.parametrize("build", [BUILD_HERE, BUILD_IN_FUNCTION], ids=["module", "factory"])
@pytest.mark.parametrize("step", [STEP_WITH_PARAMETER, STEP_ON_GLOBAL], ids=["parameter", "global"])
def test_attributes_set_on_the_model_are_followed_to_their_values(backend, build, step):
    source = HEAD + build + step
    result = convert_source(source.encode(), "train.py", backend=backend)
    assert result.status == "converted", result.error
    assert not [w.message for w in result.warnings if w.level == "WARNING"], [w.message for w in result.warnings]
    scaled = "0.01 * hvd.size()" if backend == "horovod" else "0.01 * strategy.num_replicas_in_sync"
    assert f"optimizers.Adam(learning_rate={scaled})" in result.code, result.code


def test_an_attribute_set_on_another_object_is_not_taken_for_it():
    """``other.optimizer = ...`` on a second model: the trained model's
    optimizer stays unknown (warned), never the other's rate scaled."""
    source = HEAD + textwrap.dedent("""
        model = models.Sequential([layers.Dense(1, activation="sigmoid")])
        other = models.Sequential([layers.Dense(1)])
        other.optimizer = optimizers.Adam(learning_rate=0.01)
        loss_fn = losses.BinaryCrossentropy()
        model.optimizer = make_optimizer()
        """) + STEP_ON_GLOBAL.replace("model.loss_func", "loss_fn")
    result = convert_source(source.encode(), "train.py", backend="tf-distribute")
    assert result.status == "converted", result.error
    assert "learning_rate=0.01)" in result.code and "0.01 * strategy" not in result.code
    assert any("where model.optimizer is created is unknown" in w.message for w in result.warnings), result.warnings
