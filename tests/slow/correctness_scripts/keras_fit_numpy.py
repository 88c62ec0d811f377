# tfdist-test: ranks=2,3 disjoint=yes
"""Keras Sequential trained with fit() on NumPy arrays."""
import numpy as np
import tensorflow as tf

N = 600


def label_of(sample):
    return np.int64(int(sample[2] * 1000) % 3)


tf.keras.utils.set_random_seed(6)
rng = np.random.RandomState(3)
x_train = rng.rand(N, 8).astype(np.float32)
y_train = np.array([label_of(s) for s in x_train], dtype=np.int64)

model = tf.keras.Sequential([
    tf.keras.layers.Dense(16, activation="relu", input_shape=(8,)),
    tf.keras.layers.Dense(3),
])
model.compile(optimizer=tf.keras.optimizers.SGD(learning_rate=0.05),
              loss=tf.keras.losses.SparseCategoricalCrossentropy(from_logits=True))
model.fit(x_train, y_train, batch_size=25, epochs=2, verbose=2)
model.save_weights("final.weights.h5")
