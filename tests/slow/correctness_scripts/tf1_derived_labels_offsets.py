# tfdist-test: ranks=2,3 disjoint=yes coverage=0.9
"""The issue's TF1 example: labels DERIVED from the data after the data's
assignment, n = labels.shape[0], and offsets (step * BATCH) % (n - BATCH)."""
import numpy as np
import tensorflow as tf

tf.compat.v1.disable_eager_execution()
EPOCHS = 2
BATCH = 20


def label_of(sample):
    return np.int64(int(sample[0] * 1000) % 4)


rng = np.random.RandomState(11)
data = rng.rand(600, 8).astype(np.float32)
labels = (data[:, 0] * 1000).astype(np.int64) % 4   # derived from data
n = labels.shape[0]

tf.compat.v1.set_random_seed(2)
x = tf.compat.v1.placeholder(tf.float32, [None, 8])
y = tf.compat.v1.placeholder(tf.int64, [None])
logits = tf.compat.v1.layers.dense(x, 4)
loss = tf.compat.v1.losses.sparse_softmax_cross_entropy(y, logits)
train_op = tf.compat.v1.train.GradientDescentOptimizer(0.1).minimize(loss)
with tf.compat.v1.Session() as sess:
    sess.run(tf.compat.v1.global_variables_initializer())
    for step in range(EPOCHS * n // BATCH):
        off = (step * BATCH) % (n - BATCH)
        _, l = sess.run([train_op, loss], feed_dict={x: data[off:off + BATCH], y: labels[off:off + BATCH]})
    print("final loss", l)
