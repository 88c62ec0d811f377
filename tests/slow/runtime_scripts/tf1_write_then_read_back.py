"""TF1 script: a data file written when missing (a cached download's
shape: ``if not os.path.exists(f):`` around the write), then read back by
every process at module level; trained by feeding offsets. Converted, the
write runs on rank 0 only, so every other rank must wait before reading: in
graph mode the barrier runs in a session of its own graph."""
import csv
import os

import numpy as np
import tensorflow.compat.v1 as tf

tf.disable_v2_behavior()

data_file = "rows.csv"
if not os.path.exists(data_file):
    rng = np.random.RandomState(0)
    rows = rng.rand(20000, 5)
    with open(data_file, "w") as f:
        writer = csv.writer(f)
        writer.writerows(rows.tolist())

with open(data_file, newline="") as f:
    data = np.array([[float(v) for v in row] for row in csv.reader(f)], dtype=np.float32)
x_vals, y_vals = data[:, :4], data[:, 4:]

x = tf.placeholder(tf.float32, [None, 4])
y = tf.placeholder(tf.float32, [None, 1])
pred = tf.layers.dense(x, 1)
loss = tf.reduce_mean(tf.square(pred - y))
train_op = tf.train.GradientDescentOptimizer(0.05).minimize(loss)
with tf.Session() as sess:
    sess.run(tf.global_variables_initializer())
    for step in range(100):
        off = (step * 32) % (len(x_vals) - 32)
        sess.run(train_op, feed_dict={x: x_vals[off:off + 32], y: y_vals[off:off + 32]})
print("rows", len(x_vals))
