"""regression.py written for Keras 3 (import keras): the same least squares
on polynomial features, plain SGD near half the stability limit, rows sorted
by x and a held-out validation set. A conversion that summed the workers'
gradients instead of averaging them (the rate x 4 in effect) diverges; one
that trained every worker on the same rows misses half of x."""
import os

import keras
import numpy as np

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

keras.utils.set_random_seed(7)
model = keras.Sequential([keras.Input(shape=(3,)), keras.layers.Dense(1)])
model.compile(optimizer=keras.optimizers.SGD(learning_rate=LEARNING_RATE), loss="mse")
history = model.fit(x_train, y_train, batch_size=32, epochs=EPOCHS, validation_data=(x_val, y_val), verbose=2)
print("final loss %.4f val_loss %.4f" % (history.history["loss"][-1], history.history["val_loss"][-1]))
