# tfdist-test: ranks=2 disjoint=yes
"""A GradientTape loop over the rows of two arrays, numbered:
``for i, (x, y) in enumerate(zip(images, labels))``, one sample a step.
Both arrays are sliced by rank where they are bound, so each sample keeps
its label, and the loop, iterating the sliced arrays, runs 1/N of the
steps."""
import numpy as np
import tensorflow as tf


def label_of(sample):
    return np.int64(int(sample[0, 1] * 1000) % 3)


tf.keras.utils.set_random_seed(11)
rng = np.random.RandomState(4)
images = rng.rand(160, 1, 6).astype("float32")
labels = np.array([label_of(s) for s in images], dtype=np.int64)
model = tf.keras.Sequential([tf.keras.layers.Flatten(input_shape=(1, 6)), tf.keras.layers.Dense(3)])
optimizer = tf.keras.optimizers.SGD(learning_rate=0.02)
loss_fn = tf.keras.losses.SparseCategoricalCrossentropy(from_logits=True)

for epoch in range(2):
    for i, (x, y) in enumerate(zip(images, labels)):
        with tf.GradientTape() as tape:
            logits = model(x[None], training=True)
            loss_value = loss_fn(y[None], logits)
        grads = tape.gradient(loss_value, model.trainable_variables)
        optimizer.apply_gradients(zip(grads, model.trainable_variables))
        if i % 40 == 0:
            print(epoch, i, float(loss_value))
