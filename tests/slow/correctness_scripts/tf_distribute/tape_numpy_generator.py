# tfdist-test: ranks=2 disjoint=yes
"""GradientTape loop iterating a Python generator that cuts (sample, label)
batches from NumPy arrays by offset, the step written inline in the loop.
Under tf.distribute every num_replicas_in_sync consecutive batches the
generator yields make one step, each replica training on its own."""
import numpy as np
import tensorflow as tf


def label_of(sample):
    return np.int64(int(sample[1] * 1000) % 5)


tf.keras.utils.set_random_seed(7)
rng = np.random.RandomState(3)
features = rng.rand(400, 10).astype("float32")
labels = (features[:, 1] * 1000).astype("int64") % 5
BATCH = 16


def batches(x, y, size):
    for start in range(0, len(x) - size + 1, size):
        yield x[start:start + size], y[start:start + size]


model = tf.keras.Sequential([tf.keras.layers.Dense(5, input_shape=(10,))])
optimizer = tf.keras.optimizers.SGD(0.1)
loss_fn = tf.keras.losses.SparseCategoricalCrossentropy(from_logits=True)

for epoch in range(2):
    for xb, yb in batches(features, labels, BATCH):
        with tf.GradientTape() as tape:
            loss = loss_fn(yb, model(xb, training=True))
        grads = tape.gradient(loss, model.trainable_variables)
        optimizer.apply_gradients(zip(grads, model.trainable_variables))
    print("epoch", epoch, float(loss))
