"""A tape loop whose loss is a Keras Loss object's value returned by a
helper function: Keras 3 divides that value by the number of replicas
itself under a strategy, so the conversion must not divide it again. The
whole data set is one global batch per step (weights compared exactly)."""
import json

import numpy as np
import tensorflow as tf

BATCH, RATE = 128, 0.05
x = np.random.RandomState(0).randn(256, 8).astype("float32")
y = (x @ np.arange(8, dtype="float32")[:, None] * 0.3).astype("float32")
ds = tf.data.Dataset.from_tensor_slices((x, y)).batch(BATCH)
model = tf.keras.Sequential([tf.keras.Input((8,)), tf.keras.layers.Dense(1, kernel_initializer="zeros")])
optimizer = tf.keras.optimizers.SGD(RATE)
loss_object = tf.keras.losses.MeanSquaredError()


def compute_loss(labels, predictions):
    return loss_object(labels, predictions)


@tf.function
def train_step(xb, yb):
    with tf.GradientTape() as tape:
        loss = compute_loss(yb, model(xb, training=True))
    grads = tape.gradient(loss, model.trainable_variables)
    optimizer.apply_gradients(zip(grads, model.trainable_variables))
    return loss


for epoch in range(20):
    for xb, yb in ds:
        loss = train_step(xb, yb)
print("WEIGHTS " + json.dumps(np.concatenate([w.ravel() for w in model.get_weights()]).tolist()))
