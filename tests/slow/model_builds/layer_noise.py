"""A layer adding multiplicative noise while training, drawn with keras.random."""
import numpy as np
import keras
from keras import layers


class Jitter(layers.Layer):
    def __init__(self, scale=0.1, **kwargs):
        super().__init__(**kwargs)
        self.scale = scale

    def call(self, inputs, training=False):
        if training:
            noise = keras.random.normal(keras.ops.shape(inputs), stddev=self.scale)
            return inputs * (1.0 + noise)
        return inputs


model = keras.Sequential([keras.Input((8,)), Jitter(), layers.Dense(16, activation="relu"), layers.Dense(1)])
model.compile(optimizer=keras.optimizers.SGD(0.02), loss="mse")
x = np.random.default_rng(0).random((256, 8)).astype("float32")
y = x.sum(axis=1, keepdims=True)
model.fit(x, y, batch_size=32, epochs=10)
