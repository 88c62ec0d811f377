# tfdist-test: disjoint=yes coverage=0.9
"""Keras fit on a dataset split by count: take() for training, skip() for
validation, after a shuffle fixed once. A shard taken at the source, before
the split, would hand every rank a share smaller than the take: each rank
would then train on all of its share, validation rows included (and run
more steps than half). run_eagerly=True so the probe sees the batches fit
consumes."""
import numpy as np
import tensorflow as tf

N, TRAIN, BATCH = 400, 320, 16


def label_of(sample):
    return np.float32(np.asarray(sample, np.float32).sum())


tf.keras.utils.set_random_seed(6)
rng = np.random.RandomState(2)
xs = rng.rand(N, 4).astype(np.float32)
ys = xs.sum(axis=1).astype(np.float32)

ds = tf.data.Dataset.from_tensor_slices((xs, ys)).shuffle(N, reshuffle_each_iteration=False)
train_ds = ds.take(TRAIN).batch(BATCH)
val_ds = ds.skip(TRAIN).batch(BATCH)

model = tf.keras.Sequential([tf.keras.layers.Dense(1, input_shape=(4,))])
model.compile(optimizer=tf.keras.optimizers.SGD(0.05), loss="mse", run_eagerly=True)
model.fit(train_ds, epochs=2, validation_data=val_ds, verbose=2)
