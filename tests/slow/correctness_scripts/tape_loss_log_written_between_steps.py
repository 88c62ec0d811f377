# tfdist-test: disjoint=yes coverage=0.9 rank0_files=step_losses.csv
"""A GradientTape loop that logs every step's loss to a file opened before
the loop and closed after it: the steps run on every rank, so only the open
(None elsewhere), each write and the close move to rank 0."""
import numpy as np
import tensorflow as tf


def label_of(sample):
    return np.int64(int(sample[0] * 1000) % 3)


tf.keras.utils.set_random_seed(5)
x = np.random.RandomState(2).rand(384, 6).astype("float32")
y = np.array([label_of(s) for s in x], dtype="int64")
dataset = tf.data.Dataset.from_tensor_slices((x, y)).batch(16)
model = tf.keras.Sequential([tf.keras.layers.Dense(16, activation="relu"), tf.keras.layers.Dense(3)])
optimizer = tf.keras.optimizers.Adam(0.01)
loss_fn = tf.keras.losses.SparseCategoricalCrossentropy(from_logits=True)

log = open("step_losses.csv", "w")
for epoch in range(2):
    for xb, yb in dataset:
        with tf.GradientTape() as tape:
            loss = loss_fn(yb, model(xb, training=True))
        grads = tape.gradient(loss, model.trainable_variables)
        optimizer.apply_gradients(zip(grads, model.trainable_variables))
        log.write(f"{epoch},{float(loss):.5f}\n")
log.close()
