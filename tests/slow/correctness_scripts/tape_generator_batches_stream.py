# tfdist-test: ranks=2,3 disjoint=yes coverage=0.9
"""A GradientTape loop over a Python generator of (images, labels) batches,
numbered: ``for step, (x, y) in enumerate(batches(images, labels, 16))``.
tfdist cannot count what a generator yields, so each rank takes every
N-th batch it yields, in whole rounds (the same number of steps on every
rank, a last partial round dropped); the generator runs in the same order on
every rank, so the shares are disjoint and each batch keeps its labels."""
import numpy as np
import tensorflow as tf


def label_of(sample):
    return np.int64(int(sample[0] * 1000) % 3)


def batches(x, y, size):
    for start in range(0, len(x) - size + 1, size):
        yield x[start:start + size], y[start:start + size]


tf.keras.utils.set_random_seed(3)
rng = np.random.RandomState(8)
images = rng.rand(160, 5).astype("float32")
labels = np.array([label_of(s) for s in images], dtype=np.int64)
model = tf.keras.Sequential([tf.keras.layers.Dense(8, activation="relu"), tf.keras.layers.Dense(3)])
optimizer = tf.keras.optimizers.SGD(learning_rate=0.05)
loss_fn = tf.keras.losses.SparseCategoricalCrossentropy(from_logits=True)

for epoch in range(3):
    for step, (x, y) in enumerate(batches(images, labels, 16)):
        with tf.GradientTape() as tape:
            loss_value = loss_fn(y, model(x, training=True))
        grads = tape.gradient(loss_value, model.trainable_variables)
        optimizer.apply_gradients(zip(grads, model.trainable_variables))
        if step % 4 == 0:
            print(epoch, step, float(loss_value))
