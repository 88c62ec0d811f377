# tfdist-test: disjoint=yes coverage=0.9
"""Rows read one by one from the files tf.data.Dataset.list_files names
(iterated into a Python list), then handed to from_tensor_slices and
trained on in a GradientTape loop. list_files shuffles with a random seed of
each process: the rows' order, and so the shares taken from them, would
differ from rank to rank (overlapping shares) unless every rank uses one
seed. The files are the installed NumPy's own modules (present wherever the
script runs); a row is made from its path."""
import os

import numpy as np
import tensorflow as tf


def label_of(sample):
    return np.int64(int(sample[0] * 1000) % 3)


def features(path):
    code = tf.strings.to_hash_bucket_fast(path, 2 ** 30)
    return tf.stack([tf.cast(code % m, tf.float32) / float(m) for m in (997, 991, 983, 977, 971)])


pattern = os.path.join(os.path.dirname(np.__file__), "*", "*.py")
files = tf.data.Dataset.list_files(pattern)
rows = []
for path in iter(files):
    rows.append(features(path))
rows = tf.stack(rows, axis=0)
labels = tf.constant([label_of(r) for r in rows.numpy()], dtype=tf.int64)
dataset = tf.data.Dataset.from_tensor_slices((rows, labels)).batch(16)

tf.keras.utils.set_random_seed(11)
model = tf.keras.Sequential([tf.keras.layers.Dense(16, activation="relu"), tf.keras.layers.Dense(3)])
optimizer = tf.keras.optimizers.Adam(0.01)
loss_fn = tf.keras.losses.SparseCategoricalCrossentropy(from_logits=True)
for epoch in range(2):
    for x, y in dataset:
        with tf.GradientTape() as tape:
            loss = loss_fn(y, model(x, training=True))
        grads = tape.gradient(loss, model.trainable_variables)
        optimizer.apply_gradients(zip(grads, model.trainable_variables))
    print(epoch, float(loss))
