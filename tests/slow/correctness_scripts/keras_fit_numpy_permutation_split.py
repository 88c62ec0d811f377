# tfdist-test: disjoint=yes coverage=0.5 split=random
"""Keras fit on arrays shuffled with an unseeded np.random.permutation, then
split into training and validation rows, as many notebooks do. Each process
would draw its own permutation: the ranks' shares would overlap (and hold
each other's validation rows). Converted, NumPy is seeded the same on every
rank before the permutation, so the shares are disjoint (checked)."""
import numpy as np
import tensorflow as tf

N = 600


def label_of(sample):
    return np.int64(int(sample[6] * 1000) % 3)


rng = np.random.RandomState(12)
x = rng.rand(N, 8).astype(np.float32)
y = np.array([label_of(s) for s in x], dtype=np.int64)
idx = np.random.permutation(len(x))
x, y = x[idx], y[idx]
split = int(0.8 * len(x))
x_train, x_val = x[:split], x[split:]
y_train, y_val = y[:split], y[split:]

tf.keras.utils.set_random_seed(3)
model = tf.keras.Sequential([
    tf.keras.layers.Dense(16, activation="relu", input_shape=(8,)),
    tf.keras.layers.Dense(3),
])
model.compile(optimizer=tf.keras.optimizers.SGD(learning_rate=0.05),
              loss=tf.keras.losses.SparseCategoricalCrossentropy(from_logits=True))
model.fit(x_train, y_train, batch_size=24, epochs=2, validation_data=(x_val, y_val), verbose=2)
