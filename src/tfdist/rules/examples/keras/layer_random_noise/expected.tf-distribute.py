"""A layer adding multiplicative noise while training, drawn with keras.random."""
import numpy as np
import keras
import tensorflow as tf
import os
from keras import layers

# tf.distribute: one worker of the cluster TF_CONFIG describes, else every local device.
strategy = (tf.distribute.MultiWorkerMirroredStrategy() if "TF_CONFIG" in os.environ
            else tf.distribute.MirroredStrategy())
# tf.distribute: Keras 3 fit() hands the strategy's reduce a nested batch (only to build the model from its shapes), which fails when the replicas' parts differ in size, and scalar metrics along axis 0, which MultiWorkerMirroredStrategy rejects (keras-team/keras#20585): answer the first with this replica's part, reduce the others as MirroredStrategy does.
def reduce_for_keras3(reduce):
    def reduce_each(reduce_op, value, axis):
        if axis is None and tf.nest.is_nested(value):
            return tf.nest.map_structure(lambda v: strategy.experimental_local_results(v)[0], value)
        local = strategy.experimental_local_results(value)[0]
        if axis is not None and "TF_CONFIG" in os.environ and getattr(getattr(local, "shape", None), "rank", None) == 0:
            return reduce(reduce_op, value, axis=None)
        return reduce(reduce_op, value, axis)
    return reduce_each
if int(keras.__version__.split(".")[0]) >= 3:
    strategy.reduce = reduce_for_keras3(strategy.reduce)


class Jitter(layers.Layer):
    def __init__(self, scale=0.1, **kwargs):
        super().__init__(**kwargs)
        self.seed_generator = keras.random.SeedGenerator()
        self.scale = scale

    def call(self, inputs, training=False):
        if training:
            noise = keras.random.normal(keras.ops.shape(inputs), stddev=self.scale, seed=self.seed_generator)
            return inputs * (1.0 + noise)
        return inputs


with strategy.scope():
    model = keras.Sequential([keras.Input((8,)), Jitter(), layers.Dense(16, activation="relu"), layers.Dense(1)])
    model.compile(optimizer=keras.optimizers.Adam(learning_rate=0.001 * strategy.num_replicas_in_sync), loss="mse")
x = np.random.default_rng(0).random((256, 8)).astype("float32")
y = x.sum(axis=1, keepdims=True)
model.fit(x, y, batch_size=32 * strategy.num_replicas_in_sync, epochs=2, verbose=1 if strategy.extended.should_checkpoint else 0)
