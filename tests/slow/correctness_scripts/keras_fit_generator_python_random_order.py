# tfdist-test: ranks=2 disjoint=yes coverage=0.9
"""Keras fit on an endless generator function of the script that
reshuffles its row order with Python's random module (no seed) at every
pass. Each rank keeps every N-th batch of the stream: the shares are
disjoint only if every rank makes the same order, so Python's random is
seeded the same on every rank before fit (it was not: each rank shuffled
its own way and the shares overlapped). run_eagerly=True: the probe sees
the batches."""
import random

import numpy as np
import tensorflow as tf

N, BATCH = 256, 16


def label_of(sample):
    return np.int64(sample[0] + sample[1] > 1.0)


def batches(x, y, size):
    order = list(range(len(x)))
    while True:
        random.shuffle(order)
        for start in range(0, len(order) - size + 1, size):
            rows = order[start:start + size]
            yield x[rows], y[rows]


tf.random.set_seed(8)
rng = np.random.RandomState(14)
x_train = rng.rand(N, 4).astype(np.float32)
y_train = np.array([label_of(s) for s in x_train], dtype=np.int64)
model = tf.keras.Sequential([tf.keras.layers.Dense(8, activation="relu", input_shape=(4,)), tf.keras.layers.Dense(2)])
model.compile(optimizer=tf.keras.optimizers.SGD(learning_rate=0.05),
              loss=tf.keras.losses.SparseCategoricalCrossentropy(from_logits=True), run_eagerly=True)
model.fit(batches(x_train, y_train, BATCH), steps_per_epoch=N // BATCH, epochs=2, verbose=2)
