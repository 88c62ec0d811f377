"""A trainer class keeping a model another module builds (one element of
the tuple its factory returns), compiled in __init__ and fitted in a method:
the shape of a held-out repository's SSD / FCN trainers."""
import numpy as np
import tensorflow as tf

from nets import build_regressor


class Trainer:
    def __init__(self, features):
        self.model = None
        self.build(features)

    def build(self, features):
        _, model = build_regressor(features)
        self.model = model
        self.model.compile(optimizer=tf.keras.optimizers.SGD(0.05), loss="mse")

    def train(self, x, y):
        self.model.fit(x, y, batch_size=32, epochs=4, shuffle=False)


tf.keras.utils.set_random_seed(3)
rng = np.random.default_rng(0)
x = rng.normal(size=(512, 8)).astype("float32")
y = (x @ rng.normal(size=(8, 1)) + 0.1).astype("float32")
Trainer(8).train(x, y)
