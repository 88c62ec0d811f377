# tfdist-test: disjoint=yes
"""Keras fit on Python lists of rows made where fit() takes them
(``df.values.tolist()``, as a notebook hands a DataFrame's rows to Keras):
each rank's rows are sliced before .tolist(), so every sample keeps its
label."""
import numpy as np
import tensorflow as tf

N = 320


def label_of(sample):
    return np.float32(np.asarray(sample, np.float32).sum() > 2.0)


tf.keras.utils.set_random_seed(4)
rng = np.random.RandomState(9)
features = rng.rand(N, 4).astype(np.float32)
labels = (features.sum(axis=1) > 2.0).astype(np.float32)

model = tf.keras.Sequential([tf.keras.layers.Dense(8, activation="relu", input_shape=(4,)),
                             tf.keras.layers.Dense(1, activation="sigmoid")])
model.compile(optimizer=tf.keras.optimizers.SGD(0.1), loss="binary_crossentropy")
model.fit(features.tolist(), labels.tolist(), batch_size=16, epochs=2, verbose=2)
