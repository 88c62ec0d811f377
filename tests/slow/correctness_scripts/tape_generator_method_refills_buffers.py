# tfdist-test: ranks=2,3 disjoint=yes coverage=0.9
"""A GradientTape loop over a generator method of the script's own batch
class (``for x, y in batches.generate()``) that fills the same two arrays
for every batch and yields them again: the widely copied
KerasBatchGenerator shape. Each rank keeps every N-th batch of the stream,
in whole rounds; a batch kept must be copied when it is read, before the
generator refills the arrays for the next one (or every rank would train on
the round's last batch)."""
import numpy as np
import tensorflow as tf


def label_of(sample):
    return np.int64(int(sample[0] * 1000) % 3)


class BatchGenerator:
    def __init__(self, data, labels, batch_size):
        self.data = data
        self.labels = labels
        self.batch_size = batch_size
        self.current_idx = 0

    def generate(self):
        x = np.zeros((self.batch_size, self.data.shape[1]), dtype="float32")
        y = np.zeros((self.batch_size,), dtype="int64")
        self.current_idx = 0
        while self.current_idx + self.batch_size <= len(self.data):
            for i in range(self.batch_size):
                x[i, :] = self.data[self.current_idx]
                y[i] = self.labels[self.current_idx]
                self.current_idx += 1
            yield x, y


tf.keras.utils.set_random_seed(3)
rng = np.random.RandomState(8)
images = rng.rand(192, 5).astype("float32")
labels = np.array([label_of(s) for s in images], dtype=np.int64)
batches = BatchGenerator(images, labels, 16)
model = tf.keras.Sequential([tf.keras.layers.Dense(8, activation="relu"), tf.keras.layers.Dense(3)])
optimizer = tf.keras.optimizers.SGD(learning_rate=0.05)
loss_fn = tf.keras.losses.SparseCategoricalCrossentropy(from_logits=True)

for epoch in range(3):
    for x, y in batches.generate():
        with tf.GradientTape() as tape:
            loss_value = loss_fn(y, model(x, training=True))
        grads = tape.gradient(loss_value, model.trainable_variables)
        optimizer.apply_gradients(zip(grads, model.trainable_variables))
    print(epoch, float(loss_value))
