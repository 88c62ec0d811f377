# tfdist-test: ranks=2,3 samples=none
"""Keras fit() on a generator function of the script that loops over the
arrays in order for ever, with steps_per_epoch: every rank would read the
same batches from the start, so each rank keeps every N-th batch the
generator yields (whole rounds) and runs 1/N of steps_per_epoch. The probe
does not record what fit() reads from a generator (samples=none): exit,
variables, steps and the learning rate are checked here, and the same
share of a stream is checked sample by sample in
tape_generator_batches_stream.py."""
import numpy as np
import tensorflow as tf

N = 480
BATCH = 16


def label_of(sample):
    return np.int64(int(sample[1] * 1000) % 3)


def batches(x, y, size):
    while True:
        for start in range(0, len(x) - size + 1, size):
            yield x[start:start + size], y[start:start + size]


tf.keras.utils.set_random_seed(9)
rng = np.random.RandomState(5)
x_train = rng.rand(N, 6).astype(np.float32)
y_train = np.array([label_of(s) for s in x_train], dtype=np.int64)
model = tf.keras.Sequential([tf.keras.layers.Dense(12, activation="relu", input_shape=(6,)), tf.keras.layers.Dense(3)])
model.compile(optimizer=tf.keras.optimizers.SGD(learning_rate=0.05),
              loss=tf.keras.losses.SparseCategoricalCrossentropy(from_logits=True))
model.fit(batches(x_train, y_train, BATCH), steps_per_epoch=N // BATCH, epochs=2)
