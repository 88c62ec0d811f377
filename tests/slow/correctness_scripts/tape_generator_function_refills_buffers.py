# tfdist-test: ranks=2,3 disjoint=yes coverage=0.9
"""A GradientTape loop over a generator function that allocates its batch
arrays once and refills them for every batch it yields (a common way to
spare allocations). The engines group or keep batches of the stream (each
rank every N-th one; each replica one of N consecutive ones): a batch must
be copied as it is read, or the next refill overwrites it and the ranks or
replicas all train on the same samples."""
import numpy as np
import tensorflow as tf


def label_of(sample):
    return np.int64(int(sample[0] * 1000) % 3)


def batches(x, y, size):
    xb = np.zeros((size, x.shape[1]), dtype=x.dtype)
    yb = np.zeros((size,), dtype=y.dtype)
    for start in range(0, len(x) - size + 1, size):
        xb[:] = x[start:start + size]
        yb[:] = y[start:start + size]
        yield xb, yb


tf.keras.utils.set_random_seed(3)
rng = np.random.RandomState(8)
images = rng.rand(192, 5).astype("float32")
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
    print(epoch, float(loss_value))
