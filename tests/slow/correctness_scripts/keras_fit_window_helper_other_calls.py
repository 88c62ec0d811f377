# tfdist-test: disjoint=yes coverage=0.9
"""Keras fit on windows of a series cut by tf.data (window + flat_map), made
by one helper that other calls use too: a look at a few windows (a for loop)
and the test windows given to evaluate(). Only the training calls may be
sharded (tfdist gives the helper a shard_by_rank keyword for them); the look
and the test set keep the whole data. The series follows the logistic map, so the label of a
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
valid_set = window_dataset(series[480:540], WINDOW)

model = tf.keras.Sequential([
    tf.keras.layers.Dense(16, activation="relu", input_shape=(WINDOW,)),
    tf.keras.layers.Dense(1),
])
model.compile(optimizer=tf.keras.optimizers.Adam(1e-3), loss="mse", run_eagerly=True)
for x_look, y_look in window_dataset(series[:40], WINDOW).take(1):
    print("a batch of windows:", x_look.shape, y_look.shape)
model.fit(train_set, epochs=2, validation_data=valid_set, verbose=2)
test_set = window_dataset(series[540:], WINDOW)
print("test loss:", model.evaluate(test_set, verbose=0))
