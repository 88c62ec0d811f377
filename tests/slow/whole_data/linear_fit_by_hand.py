"""A linear fit on all its rows at every step, its variables updated by
hand (the shape of TensorFlow's basic training loops): no batch, no
optimizer."""
import json

import numpy as np
import tensorflow as tf

RATE = 0.1
rows = np.random.RandomState(0).randn(200, 3).astype("float32")
targets = rows @ np.array([[2.0], [-1.0], [0.5]], dtype="float32") + 0.3

w = tf.Variable(tf.zeros([3, 1]))
b = tf.Variable(0.0)

for epoch in range(12):
    with tf.GradientTape() as tape:
        loss = tf.reduce_mean(tf.square(rows @ w + b - targets))
    dw, db = tape.gradient(loss, [w, b])
    w.assign_sub(RATE * dw)
    b.assign_sub(RATE * db)

print("WEIGHTS " + json.dumps(np.concatenate([w.numpy().ravel(), [b.numpy()]]).tolist()))
