"""Original single-process script for the `verify --compare` tests.

Least squares on fixed polynomial features, trained by Keras fit with plain
SGD at a learning rate near half the stability limit: the converted run (the
rate x 2 on 2 ranks, the batch x 2) still converges, a rate scaled twice
(x 4) exceeds the limit and diverges.  The rows are sorted by x, so a rank
that trains on the first half of them never sees x > 0, and the held-out
validation set (all of [-1, 1]) shows it.
"""
import os

import numpy as np
import tensorflow as tf

EPOCHS = int(os.environ.get("TFDIST_BENCH_EPOCHS", "6"))
LEARNING_RATE = 0.3

rng = np.random.default_rng(7)


def features(x):
    return np.concatenate([x, x ** 2, x ** 3], axis=1).astype(np.float32)


def target(x):
    return (np.sin(3 * x) + 0.5 * x ** 2).astype(np.float32)


x_raw = np.sort(rng.uniform(-1, 1, size=(2048, 1)), axis=0)
x_train, y_train = features(x_raw), target(x_raw)
x_held = rng.uniform(-1, 1, size=(512, 1))
x_val, y_val = features(x_held), target(x_held)

tf.random.set_seed(7)
model = tf.keras.Sequential([tf.keras.Input(shape=(3,)), tf.keras.layers.Dense(1)])
model.compile(optimizer=tf.keras.optimizers.SGD(learning_rate=LEARNING_RATE), loss="mse")
history = model.fit(x_train, y_train, batch_size=32, epochs=EPOCHS, validation_data=(x_val, y_val), verbose=2)
print("final loss %.4f val_loss %.4f" % (history.history["loss"][-1], history.history["val_loss"][-1]))
