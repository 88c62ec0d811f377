# tfdist-test: ranks=2 disjoint=yes
"""Keras fit over a tf.data dataset with run_eagerly=True (fit then fetches
each batch eagerly, so the probe sees the batches)."""
import numpy as np
import tensorflow as tf

N, BATCH = 320, 32


def label_of(sample):
    return np.float32(sample.sum())


tf.keras.utils.set_random_seed(7)
rng = np.random.RandomState(4)
xs = rng.rand(N, 4).astype(np.float32)
ys = xs.sum(axis=1).astype(np.float32)

train = tf.data.Dataset.from_tensor_slices((xs, ys)).shuffle(N, seed=1).batch(BATCH)
model = tf.keras.Sequential([tf.keras.layers.Dense(1, input_shape=(4,))])
model.compile(optimizer=tf.keras.optimizers.SGD(0.05), loss="mse", run_eagerly=True)
model.fit(train, epochs=2, verbose=2)
