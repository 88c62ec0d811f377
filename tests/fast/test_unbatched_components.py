"""A scalar constant a map after .batch() puts beside each batch (a dummy
target: ``ds.batch(32).map(lambda v: (v, (v, none_tensor)))`` with
``none_tensor = tf.constant(0.0)``; a held-out VAE notebook's shape).
tf.distribute splits every component of a global batch between replicas
along its first dimension and the converted script stopped at its first
step (IndexError in get_static_batch_dim, on 2 workers and on 1 x 2
devices), with no warning. No edit is exact (a loss may read the scalar as
it is): tf-distribute refuses the file with the line and the edit to make;
Horovod, which does not split batches, converts it. Each spelling is one
program; a scalar mapped before the batch, or a component with a batch
dimension, is no such thing."""
from __future__ import annotations

import pytest

from tfdist.api import convert_file

FIT = """\
import numpy as np
import tensorflow as tf

x = np.random.RandomState(0).rand(512, 8).astype("float32")
inputs = tf.keras.Input((8,))
hidden = tf.keras.layers.Dense(8, activation="relu")(inputs)
model = tf.keras.Model(inputs, [tf.keras.layers.Dense(8)(hidden), tf.keras.layers.Dense(1)(hidden)])


def aux_loss(y_true, y_pred):
    return tf.reduce_mean(tf.square(y_pred))


model.compile(optimizer="adam", loss=["mse", aux_loss])
{setup}
train_dataset = tf.data.Dataset.from_tensor_slices(x).shuffle(512, seed=1){pipeline}
model.fit({fed}, epochs=3)
"""

BATCH = ".batch(32)"
SCALARS = {
    "named_constant": ("none_tensor = tf.constant(0.0)", BATCH + ".map(lambda v: (v, (v, none_tensor)))",
                       "train_dataset", 16),
    "literal": ("", BATCH + ".map(lambda v: (v, (v, 0.0)))", "train_dataset", 16),
    "zeros_of_no_shape": ("", BATCH + ".map(lambda v: (v, [v, tf.zeros([])]))", "train_dataset", 16),
    "mapped_by_a_function": ("def with_dummy(v):\n    return v, (v, tf.constant(0))\n",
                             BATCH + ".map(with_dummy)", "train_dataset", 16),
    "mapped_where_fed": ("none_tensor = tf.constant(0.0)", BATCH,
                         "train_dataset.map(lambda v: (v, (v, none_tensor)))", 17),
}
BATCHED = {
    "mapped_before_the_batch": ("none_tensor = tf.constant(0.0)", ".map(lambda v: (v, (v, none_tensor)))" + BATCH,
                                "train_dataset"),
    "given_a_batch_dimension": ("", BATCH + ".map(lambda v: (v, (v, tf.zeros_like(v[:, :1]))))", "train_dataset"),
    "a_constant_of_a_shape": ("", BATCH + ".map(lambda v: (v, (v, tf.zeros([32, 1]))))", "train_dataset"),
}


def _convert(tmp_path, src, backend):
    path = tmp_path / "train.py"
    path.write_text(src)
    return convert_file(path, backend=backend)


@pytest.mark.parametrize("name", sorted(SCALARS))
def test_tf_distribute_refuses_a_scalar_beside_the_batch_with_its_line(tmp_path, name):
    setup, pipeline, fed, line = SCALARS[name]
    r = _convert(tmp_path, FIT.format(setup=setup, pipeline=pipeline, fed=fed), "tf-distribute")
    assert r.status == "unsupported", r.status
    assert r.error_line == line
    assert "a scalar the dataset's map puts beside each batch" in r.error
    assert "Give it a batch dimension in the map" in r.error and "--backend horovod" in r.error


@pytest.mark.parametrize("name", sorted(SCALARS))
def test_horovod_converts_a_scalar_beside_the_batch(tmp_path, name):
    setup, pipeline, fed, _line = SCALARS[name]
    r = _convert(tmp_path, FIT.format(setup=setup, pipeline=pipeline, fed=fed), "horovod")
    assert r.status == "converted", r.error


@pytest.mark.parametrize("name", sorted(BATCHED))
def test_components_with_a_batch_dimension_convert(tmp_path, name):
    setup, pipeline, fed = BATCHED[name]
    r = _convert(tmp_path, FIT.format(setup=setup, pipeline=pipeline, fed=fed), "tf-distribute")
    assert r.status == "converted", r.error


TAPE = """\
import tensorflow as tf

x = tf.random.stateless_normal((256, 4), seed=(1, 2))
ds = tf.data.Dataset.from_tensor_slices(x).batch(16).map(lambda v: (v, 1.0))
model = tf.keras.Sequential([tf.keras.Input((4,)), tf.keras.layers.Dense(1)])
opt = tf.keras.optimizers.SGD(0.1)
for features, target in ds:
    with tf.GradientTape() as tape:
        loss = tf.reduce_mean(tf.square(model(features) - target))
    grads = tape.gradient(loss, model.trainable_variables)
    opt.apply_gradients(zip(grads, model.trainable_variables))
"""


def test_a_tape_loop_over_such_a_dataset_is_refused_too(tmp_path):
    r = _convert(tmp_path, TAPE, "tf-distribute")
    assert r.status == "unsupported" and r.error_line == 4, (r.status, r.error)
