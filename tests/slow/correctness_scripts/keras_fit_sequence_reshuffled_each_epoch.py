# tfdist-test: ranks=2,3 disjoint=yes coverage=0.9
"""Keras fit on a Sequence of the script's own that shuffles its sample
order with NumPy's global generator in __init__ and every on_epoch_end (the
widely copied "data generator" shape). Each rank reads every size-th batch
of it: the shares are disjoint only if every rank holds the same order, so
the wrapper re-draws that order alike on every rank (NumPy seeded by the
epoch) before the first epoch and after each."""
import math

import numpy as np
import tensorflow as tf


def label_of(sample):
    return np.int64(sample[0] + sample[1] > 1.0)


class DataGenerator(tf.keras.utils.Sequence):
    def __init__(self, x, y, batch_size=32, shuffle=True):
        super().__init__()
        self.x, self.y = x, y
        self.batch_size = batch_size
        self.shuffle = shuffle
        self.on_epoch_end()

    def __len__(self):
        return math.floor(len(self.x) / self.batch_size)

    def __getitem__(self, index):
        idx = self.indexes[index * self.batch_size:(index + 1) * self.batch_size]
        return self.x[idx], self.y[idx]

    def on_epoch_end(self):
        self.indexes = np.arange(len(self.x))
        if self.shuffle:
            np.random.shuffle(self.indexes)


x = np.random.RandomState(4).rand(768, 6).astype("float32")
y = np.array([label_of(s) for s in x], dtype="int64")
model = tf.keras.Sequential([tf.keras.layers.Dense(8, activation="relu", input_shape=(6,)), tf.keras.layers.Dense(2)])
model.compile(optimizer=tf.keras.optimizers.SGD(0.05),
              loss=tf.keras.losses.SparseCategoricalCrossentropy(from_logits=True))
model.fit(DataGenerator(x, y), epochs=2, verbose=0)
