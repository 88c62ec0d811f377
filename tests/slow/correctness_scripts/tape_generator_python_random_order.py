# tfdist-test: ranks=2 disjoint=yes coverage=0.9
"""A GradientTape loop over a generator function of the script that
shuffles its row order with Python's random module (no seed) each time it
is called. The engines share its stream by position (Horovod: every N-th
batch per rank; tf.distribute: each replica the batch at its place among N
consecutive ones, every worker running the generator): of the same order
on every process only. Python's random is seeded the same on every process
before the loop (tf.distribute refused the loop before)."""
import random

import numpy as np
import tensorflow as tf


def label_of(sample):
    return np.int64(int(sample[4] * 1000) % 3)


def batches(x, y, size):
    order = list(range(len(x)))
    random.shuffle(order)
    for start in range(0, len(order) - size + 1, size):
        rows = order[start:start + size]
        yield x[rows], y[rows]


tf.random.set_seed(2)
rng = np.random.RandomState(13)
images = rng.rand(256, 5).astype("float32")
labels = np.array([label_of(s) for s in images], dtype=np.int64)
model = tf.keras.Sequential([tf.keras.layers.Dense(8, activation="relu"), tf.keras.layers.Dense(3)])
optimizer = tf.keras.optimizers.SGD(learning_rate=0.05)
loss_fn = tf.keras.losses.SparseCategoricalCrossentropy(from_logits=True)

for epoch in range(2):
    for x, y in batches(images, labels, 16):
        with tf.GradientTape() as tape:
            loss_value = loss_fn(y, model(x, training=True))
        grads = tape.gradient(loss_value, model.trainable_variables)
        optimizer.apply_gradients(zip(grads, model.trainable_variables))
    print(epoch, float(loss_value))
