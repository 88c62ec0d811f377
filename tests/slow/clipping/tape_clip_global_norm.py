"""A tape loop clipping its gradients by global norm before the optimizer:
the whole data set is one global batch per step, so every engine's step
sees the same rows and the weights can be compared exactly."""
import json

import numpy as np
import tensorflow as tf

BATCH, RATE = 128, 0.05
x = np.random.RandomState(0).randn(256, 8).astype("float32")
y = (x @ np.arange(8, dtype="float32")[:, None] * 3.0).astype("float32")
ds = tf.data.Dataset.from_tensor_slices((x, y)).batch(BATCH)
model = tf.keras.Sequential([tf.keras.Input((8,)), tf.keras.layers.Dense(1, kernel_initializer="zeros")])
optimizer = tf.keras.optimizers.SGD(RATE)


@tf.function
def train_step(xb, yb):
    with tf.GradientTape() as tape:
        loss = tf.reduce_mean(tf.square(model(xb, training=True) - yb))
    grads = tape.gradient(loss, model.trainable_variables)
    grads, _ = tf.clip_by_global_norm(grads, 1.0)
    optimizer.apply_gradients(zip(grads, model.trainable_variables))
    return loss


for epoch in range(20):
    for xb, yb in ds:
        loss = train_step(xb, yb)
print("WEIGHTS " + json.dumps(np.concatenate([w.ravel() for w in model.get_weights()]).tolist()))
