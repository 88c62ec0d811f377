# tfdist-test: disjoint=yes coverage=0.9
"""Keras fit handed arithmetic of arrays rather than names, as tabular
notebooks do: the inputs scaled inline (x_train / 255.0) and the targets
centred on their mean (y_train - mu). Whatever the arithmetic, what fit()
is handed has its samples along the first axis: each argument is sliced by
rank as one array, rows still paired."""
import numpy as np
import tensorflow as tf

def make_data(n=480):
    rng = np.random.RandomState(5)
    x = rng.randint(0, 256, size=(n, 6)).astype(np.float32)
    return x, ((x[:, 0] - 2.0 * x[:, 3]) / 255.0).astype(np.float32)


def label_of(sample):
    """The centred target fed with this (scaled) sample (the same data made again for the mean)."""
    x = np.random.RandomState(5).randint(0, 256, size=(480, 6)).astype(np.float32)
    mean = ((x[:, 0] - 2.0 * x[:, 3]) / 255.0).astype(np.float32).mean()
    return np.float32(np.float32(sample[0] - 2.0 * sample[3]) - mean)


x_raw, y_raw = make_data()
mu = y_raw.mean()


x_train, y_train = x_raw, y_raw

tf.keras.utils.set_random_seed(4)
model = tf.keras.Sequential([
    tf.keras.layers.Dense(8, activation="relu", input_shape=(6,)),
    tf.keras.layers.Dense(1),
])
model.compile(optimizer=tf.keras.optimizers.SGD(learning_rate=0.05), loss="mse")
model.fit(x_train / 255.0, y_train - mu, batch_size=24, epochs=2, verbose=2)
