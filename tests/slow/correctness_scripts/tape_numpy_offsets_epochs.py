# tfdist-test: ranks=2,3 disjoint=yes
"""GradientTape loop over NumPy arrays cut by offsets inside epochs; the
labels are derived from the samples after the samples' assignment.  The
probe's tape source sees each step's NumPy slices (the model's input and
the loss's y_true inside the tape)."""
import numpy as np
import tensorflow as tf


def label_of(sample):
    return np.int64(int(sample[0] * 1000) % 4)


tf.keras.utils.set_random_seed(16)
rng = np.random.RandomState(0)
x_train = rng.rand(480, 8).astype("float32")
y_train = (x_train[:, 0] * 1000).astype("int64") % 4
BATCH = 20
steps_per_epoch = len(x_train) // BATCH

model = tf.keras.Sequential([tf.keras.layers.Dense(4, input_shape=(8,))])
opt = tf.keras.optimizers.SGD(0.1)
loss_fn = tf.keras.losses.SparseCategoricalCrossentropy(from_logits=True)

for epoch in range(2):
    for i in range(steps_per_epoch):
        xb = x_train[i * BATCH:(i + 1) * BATCH]
        yb = y_train[i * BATCH:(i + 1) * BATCH]
        with tf.GradientTape() as tape:
            loss = loss_fn(yb, model(xb, training=True))
        grads = tape.gradient(loss, model.trainable_variables)
        opt.apply_gradients(zip(grads, model.trainable_variables))
    print("epoch", epoch, float(loss))
