# tfdist-test: ranks=2 disjoint=yes
"""Keras fit on arrays transformed row by row where fit() takes them: a
feature axis added (tf.expand_dims(x, axis=-1), as TensorFlow 2.7+ needs for
1-D inputs) and labels one-hot encoded (tf.one_hot): each rank's rows are
sliced inside the calls, so every sample keeps its label."""
import numpy as np
import tensorflow as tf

N = 400


def label_of(sample):
    value = float(np.asarray(sample).reshape(-1)[0])
    return np.eye(3, dtype=np.float32)[int(value * 1000) % 3]


tf.keras.utils.set_random_seed(12)
rng = np.random.RandomState(7)
X_train = rng.rand(N).astype(np.float32)
train_labels = np.array([int(v * 1000) % 3 for v in X_train], dtype=np.int64)

model = tf.keras.Sequential([
    tf.keras.layers.Dense(8, activation="relu", input_shape=(1,)),
    tf.keras.layers.Dense(3, activation="softmax"),
])
model.compile(optimizer=tf.keras.optimizers.SGD(0.1), loss=tf.keras.losses.CategoricalCrossentropy())
model.fit(tf.expand_dims(X_train, axis=-1), tf.one_hot(train_labels, depth=3), batch_size=20, epochs=2, verbose=2)
