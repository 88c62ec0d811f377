# tfdist-test: disjoint=yes coverage=0.9
"""Keras fit on windows of a series cut by tf.data (window + flat_map), the
shape of forecasting notebooks: one helper makes the training and the
validation windows. The series follows the logistic map, so the label of a
window (the next step) is a function of its last step: windows cut from a
series sharded by rank before window() (every other step) would carry
other labels. run_eagerly=True so the probe sees the batches fit consumes."""
import numpy as np
import tensorflow as tf

WINDOW, BATCH = 8, 16


def step(x):
    return np.float32(3.9) * x * (np.float32(1.0) - x)


def label_of(sample):
    last = np.float32(np.asarray(sample, np.float32)[-1])
    return np.float32(3.9) * last * (np.float32(1.0) - last)


def logistic_series(n, x0):
    out = np.empty(n, np.float32)
    out[0] = x0
    for t in range(1, n):
        out[t] = step(out[t - 1])
    return out


def window_dataset(series, window_size, batch_size=BATCH, shuffle_buffer=1000):
    dataset = tf.data.Dataset.from_tensor_slices(series)
    dataset = dataset.window(window_size + 1, shift=1, drop_remainder=True)
    dataset = dataset.flat_map(lambda window: window.batch(window_size + 1))
    dataset = dataset.shuffle(shuffle_buffer)
    dataset = dataset.map(lambda window: (window[:-1], window[-1]))
    return dataset.batch(batch_size).prefetch(1)


tf.keras.utils.set_random_seed(5)
series = logistic_series(600, np.float32(0.3))
train_set = window_dataset(series[:480], WINDOW)
valid_set = window_dataset(series[480:], WINDOW)

model = tf.keras.Sequential([
    tf.keras.layers.Dense(16, activation="relu", input_shape=(WINDOW,)),
    tf.keras.layers.Dense(1),
])
model.compile(optimizer=tf.keras.optimizers.Adam(1e-3), loss="mse", run_eagerly=True)
model.fit(train_set, epochs=2, validation_data=valid_set, verbose=2)
