"""Regression with a subclassed Keras model.

A two-hidden-layer network learns a fixed smooth nonlinear function of 8
inputs (sin / product terms of a random projection). The model is written as
a `keras.Model` subclass on top of a small shared base class, compiled with
an inline SGD+momentum optimizer and trained with `fit` on a `tf.data`
pipeline. Per-epoch metrics go to ./logs/training_log.csv.
"""
import os

import numpy as np
import tensorflow as tf
from tensorflow import keras

NUM_SAMPLES = 1003
NUM_FEATURES = 8
BATCH_SIZE = 32
EPOCHS = int(os.environ.get("TFDIST_BENCH_EPOCHS", "4"))
LOG_DIR = "./logs"


class BaseNet(keras.Model):
    """Shared plumbing: a stack of hidden Dense layers."""

    def __init__(self, hidden_units, **kwargs):
        super().__init__(**kwargs)
        self.hidden = [keras.layers.Dense(n, activation="tanh") for n in hidden_units]

    def features(self, inputs):
        h = inputs
        for layer in self.hidden:
            h = layer(h)
        return h


class Net(BaseNet):
    """Regression head on top of the hidden stack."""

    def __init__(self):
        super().__init__(hidden_units=(64, 32), name="net")
        self.head = keras.layers.Dense(1)

    def call(self, inputs, training=False):
        return self.head(self.features(inputs))


def make_data(rng):
    x = rng.normal(size=(NUM_SAMPLES, NUM_FEATURES)).astype("float32")
    proj = rng.normal(size=(NUM_FEATURES, 2)).astype("float32") / np.sqrt(NUM_FEATURES)
    z = x @ proj
    y = np.sin(2.0 * z[:, :1]) + 0.5 * z[:, 1:] * z[:, :1] + 1.0
    return x, y.astype("float32")


def main():
    tf.keras.utils.set_random_seed(0)
    rng = np.random.default_rng(0)
    x, y = make_data(rng)

    os.makedirs(LOG_DIR, exist_ok=True)
    callbacks = [
        keras.callbacks.CSVLogger(os.path.join(LOG_DIR, "training_log.csv")),
        keras.callbacks.TerminateOnNaN(),
    ]

    ds = tf.data.Dataset.from_tensor_slices((x, y))
    ds = ds.shuffle(buffer_size=1024, seed=0).batch(BATCH_SIZE)

    net = Net()
    net.compile(optimizer=keras.optimizers.SGD(0.05, momentum=0.9), loss="mse")
    history = net.fit(ds, epochs=EPOCHS, verbose=2, callbacks=callbacks)

    print(f"final loss {history.history['loss'][-1]:.4f}")


if __name__ == "__main__":
    main()
