# tfdist-test: ranks=2,3 disjoint=yes coverage=0.9
"""TF1 batches cut by offset in a while loop advancing by the batch size
(``while i < N: ...; i = i + BATCH_SIZE``), N counted on the whole data
before the samples are scaled: the arrays are sliced by rank where they are
final, and the bound N is divided, so each rank walks its own share and
runs 1/N of the steps."""
import numpy as np
import tensorflow as tf

tf.compat.v1.disable_eager_execution()


def label_of(sample):
    return np.int64(int(sample[0] * 1000) % 3)


rng = np.random.RandomState(12)
x_train = rng.rand(300, 6).astype(np.float32)
y_train = np.array([label_of(r) for r in x_train], dtype=np.int64)
N = x_train.shape[0]
x_train = x_train * 1.0
BATCH_SIZE = 10

X = tf.compat.v1.placeholder(tf.float32, [None, 6])
y = tf.compat.v1.placeholder(tf.int64, [None])
W = tf.Variable(tf.zeros([6, 3]))
b = tf.Variable(tf.zeros([3]))
loss = tf.reduce_mean(tf.nn.sparse_softmax_cross_entropy_with_logits(labels=y, logits=tf.matmul(X, W) + b))
backprop = tf.compat.v1.train.GradientDescentOptimizer(0.1).minimize(loss)

with tf.compat.v1.Session() as sess:
    sess.run(tf.compat.v1.global_variables_initializer())
    for epoch in range(2):
        i = 0
        while i < N:
            x_batch = x_train[i: i + BATCH_SIZE]
            y_batch = y_train[i: i + BATCH_SIZE]
            sess.run(backprop, feed_dict={X: x_batch, y: y_batch})
            i = i + BATCH_SIZE
        print("epoch", epoch + 1)
