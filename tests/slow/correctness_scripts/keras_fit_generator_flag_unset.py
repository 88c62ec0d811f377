# tfdist-test: ranks=2 disjoint=yes coverage=0.9
"""Keras fit on a generator function of the script that draws random rows
only when its ``shuffle`` flag is set and otherwise walks the arrays in
order (the widely copied time-series generator), made with shuffle=False
at module level. It draws nothing then: re-seeding NumPy per rank (what a
generator drawing from NumPy gets) would give every rank the same batches.
The flag the call passes decides; each rank keeps every N-th batch of the
stream instead. run_eagerly=True: the probe sees the batches."""
import numpy as np
import tensorflow as tf

N, BATCH = 384, 16


def label_of(sample):
    return np.int64(int(sample[0] * 1000) % 3)


def generator(x, y, shuffle=False, batch_size=BATCH):
    i = 0
    while True:
        if shuffle:
            rows = np.random.randint(0, len(x), size=batch_size)
        else:
            if i + batch_size > len(x):
                i = 0
            rows = np.arange(i, i + batch_size)
            i += len(rows)
        yield x[rows], y[rows]


tf.keras.utils.set_random_seed(4)
rng = np.random.RandomState(6)
x_train = rng.rand(N, 5).astype(np.float32)
y_train = np.array([label_of(s) for s in x_train], dtype=np.int64)
train_gen = generator(x_train, y_train, shuffle=False)
model = tf.keras.Sequential([tf.keras.layers.Dense(8, activation="relu", input_shape=(5,)), tf.keras.layers.Dense(3)])
model.compile(optimizer=tf.keras.optimizers.SGD(learning_rate=0.05),
              loss=tf.keras.losses.SparseCategoricalCrossentropy(from_logits=True), run_eagerly=True)
model.fit(train_gen, steps_per_epoch=N // BATCH, epochs=2, verbose=2)
