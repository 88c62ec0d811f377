"""A linear fit on all its rows at every step, its gradients returned by a
helper holding the tape (the shape of TensorFlow's custom training
walkthrough, on the whole data), applied by a Keras optimizer to variables
the script made itself."""
import json

import numpy as np
import tensorflow as tf

RATE = 0.1
rows = np.random.RandomState(0).randn(200, 3).astype("float32")
targets = rows @ np.array([[2.0], [-1.0], [0.5]], dtype="float32") + 0.3

w = tf.Variable(tf.zeros([3, 1]))
b = tf.Variable(0.0)
optimizer = tf.keras.optimizers.SGD(RATE)


def grad(inputs, labels):
    with tf.GradientTape() as tape:
        loss = tf.reduce_mean(tf.square(inputs @ w + b - labels))
    return loss, tape.gradient(loss, [w, b])


for epoch in range(12):
    loss, grads = grad(rows, targets)
    optimizer.apply_gradients(zip(grads, [w, b]))

print("WEIGHTS " + json.dumps(np.concatenate([w.numpy().ravel(), [b.numpy()]]).tolist()))
