# tfdist-test: ranks=2 disjoint=yes coverage=0.5 split=random
"""Keras fit on the left part of keras.utils.split_dataset(...), shuffled
before the split without a seed, validated on its right part. Each rank
takes an equal share of each part right after the split (before batching);
the split gets one seed on every rank, or each process would split its own
way and one rank's training rows would be another's validation rows.
The original's split is its own random one (split=random; the ranks
together cover about 3/4 of the rows it trained on: coverage=0.5).
run_eagerly=True: the probe sees the batches."""
import numpy as np
import tensorflow as tf

N = 400


def label_of(sample):
    return np.int64(sample[0] + sample[3] > 1.0)


tf.random.set_seed(3)
rng = np.random.RandomState(21)
xs = rng.rand(N, 4).astype(np.float32)
ys = np.array([label_of(s) for s in xs], dtype=np.int64)
train_ds, val_ds = tf.keras.utils.split_dataset((xs, ys), left_size=0.75, shuffle=True)
train_ds = train_ds.batch(16)
val_ds = val_ds.batch(16)
model = tf.keras.Sequential([tf.keras.layers.Dense(8, activation="relu", input_shape=(4,)), tf.keras.layers.Dense(2)])
model.compile(optimizer=tf.keras.optimizers.SGD(learning_rate=0.05),
              loss=tf.keras.losses.SparseCategoricalCrossentropy(from_logits=True), run_eagerly=True)
model.fit(train_ds, validation_data=val_ds, epochs=2, verbose=2)
