"""fit() on a keras.utils.Sequence subclass (the "data generator" shape of
many tutorials and books): batches served by index, rows reshuffled with
NumPy in on_epoch_end, a second Sequence as validation_data."""
import math

import numpy as np
import tensorflow as tf


class Batches(tf.keras.utils.Sequence):
    def __init__(self, x, y, batch_size):
        super().__init__()
        self.x, self.y, self.batch_size = x, y, batch_size
        self.order = np.arange(len(x))

    def __len__(self):
        return math.ceil(len(self.x) / self.batch_size)

    def __getitem__(self, index):
        rows = self.order[index * self.batch_size:(index + 1) * self.batch_size]
        return self.x[rows], self.y[rows]

    def on_epoch_end(self):
        np.random.shuffle(self.order)


rng = np.random.default_rng(3)
x = rng.normal(size=(2048, 8)).astype("float32")
y = (x @ rng.normal(size=(8, 1)) + 0.1 * rng.normal(size=(2048, 1))).astype("float32")
train = Batches(x[:1536], y[:1536], 32)
val = Batches(x[1536:], y[1536:], 64)

tf.keras.utils.set_random_seed(0)
model = tf.keras.Sequential([tf.keras.Input(shape=(8,)), tf.keras.layers.Dense(16, activation="relu"),
                             tf.keras.layers.Dense(1)])
model.compile(optimizer=tf.keras.optimizers.SGD(0.02), loss="mse")
history = model.fit(train, validation_data=val, epochs=4, verbose=2)
print("final loss", history.history["loss"][-1])
