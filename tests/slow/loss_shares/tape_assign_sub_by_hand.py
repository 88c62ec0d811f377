"""A tape loop that updates its tf.Variables by hand (``w.assign_sub(RATE *
dw)``, no optimizer): under tf.distribute nobody sums the replicas'
gradients and a MirroredVariable takes no update from one replica, so the
conversion sums the gradients and updates every replica's copy at once.
The whole data set is one global batch per step (weights compared exactly)."""
import json

import numpy as np
import tensorflow as tf

BATCH, RATE = 128, 0.05
x = np.random.RandomState(0).randn(256, 8).astype("float32")
y = (x @ np.arange(8, dtype="float32")[:, None] * 0.3).astype("float32")
ds = tf.data.Dataset.from_tensor_slices((x, y)).batch(BATCH)
w = tf.Variable(tf.zeros([8, 1]))
b = tf.Variable(0.0)


@tf.function
def train_step(xb, yb):
    with tf.GradientTape() as tape:
        loss = tf.reduce_mean(tf.square(yb - (xb @ w + b)))
    dw, db = tape.gradient(loss, [w, b])
    w.assign_sub(RATE * dw)
    b.assign(b - RATE * db)
    return loss


for epoch in range(20):
    for xb, yb in ds:
        loss = train_step(xb, yb)
print("WEIGHTS " + json.dumps(np.concatenate([w.numpy().ravel(), [b.numpy()]]).tolist()))
