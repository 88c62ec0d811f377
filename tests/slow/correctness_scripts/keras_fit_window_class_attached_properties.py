# tfdist-test: disjoint=yes coverage=0.9
"""Keras fit on windows made by a window class whose make_dataset method
and train/val properties are attached after the class is defined
(WindowGenerator.train = train), the TensorFlow time-series tutorial's
style. make_dataset shuffles with timeseries_dataset_from_array(shuffle=True)
and no seed, and builds the validation windows too: sharded at the
property's call, every rank must shuffle alike or the shares overlap (no
global seed here, so only the conversion can make them alike). The series
follows the logistic map: a window's label (the next step) is a function
of its last step. run_eagerly=True so the probe sees the batches fit consumes."""
import numpy as np
import tensorflow as tf

WINDOW, BATCH = 8, 16


def label_of(sample):
    last = np.float32(np.asarray(sample, np.float32)[-1])
    return np.float32(3.9) * last * (np.float32(1.0) - last)


def logistic_series(n, x0):
    out = np.empty(n, np.float32)
    out[0] = x0
    for t in range(1, n):
        out[t] = np.float32(3.9) * out[t - 1] * (np.float32(1.0) - out[t - 1])
    return out


class WindowGenerator:
    def __init__(self, width, train_series, val_series):
        self.width = width
        self.train_series = train_series
        self.val_series = val_series

    def split_window(self, windows):
        return windows[:, :self.width], windows[:, self.width]


def make_dataset(self, data):
    ds = tf.keras.utils.timeseries_dataset_from_array(
        data=data, targets=None, sequence_length=self.width + 1, sequence_stride=1,
        shuffle=True, batch_size=BATCH)
    return ds.map(self.split_window)


WindowGenerator.make_dataset = make_dataset


@property
def train(self):
    return self.make_dataset(self.train_series)


@property
def val(self):
    return self.make_dataset(self.val_series)


WindowGenerator.train = train
WindowGenerator.val = val

series = logistic_series(600, np.float32(0.3))
window = WindowGenerator(WINDOW, series[:488], series[488:568])  # 480 training windows: 30 full batches
model = tf.keras.Sequential([
    tf.keras.layers.Dense(16, activation="relu", input_shape=(WINDOW,)),
    tf.keras.layers.Dense(1),
])
model.compile(optimizer=tf.keras.optimizers.Adam(1e-3), loss="mse", run_eagerly=True)
model.fit(window.train, epochs=2, validation_data=window.val, verbose=2)
