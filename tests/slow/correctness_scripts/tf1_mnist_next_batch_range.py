# tfdist-test: ranks=2,3 disjoint=no coverage=0.9 standin=mnist
"""TF1 MNIST tutorial: read_data_sets + `for step in range(1, num_steps + 1)`
drawing mnist.train.next_batch(batch_size).  next_batch shuffles with NumPy's
global RNG, so each rank draws its own random stream (disjoint=no); the pairs
must stay intact and each rank must take 1/N of the steps."""
from __future__ import print_function

import numpy as np
import tensorflow.compat.v1 as tf
from tensorflow.examples.tutorials.mnist import input_data

tf.disable_v2_behavior()


def label_of(sample):
    from tfdist_mnist_standin import label_of as standin_label
    return np.eye(10)[standin_label(sample)]


mnist = input_data.read_data_sets("/tmp/data/", one_hot=True)

learning_rate = 0.1
num_steps = 60
batch_size = 50
display_step = 20

X = tf.placeholder("float", [None, 784])
Y = tf.placeholder("float", [None, 10])
W = tf.Variable(tf.zeros([784, 10]))
b = tf.Variable(tf.zeros([10]))
logits = tf.matmul(X, W) + b
loss_op = tf.reduce_mean(tf.nn.softmax_cross_entropy_with_logits_v2(logits=logits, labels=Y))
optimizer = tf.train.GradientDescentOptimizer(learning_rate=learning_rate)
train_op = optimizer.minimize(loss_op)
init = tf.global_variables_initializer()

with tf.Session() as sess:
    sess.run(init)
    for step in range(1, num_steps + 1):
        batch_x, batch_y = mnist.train.next_batch(batch_size)
        sess.run(train_op, feed_dict={X: batch_x, Y: batch_y})
        if step % display_step == 0 or step == 1:
            loss = sess.run(loss_op, feed_dict={X: batch_x, Y: batch_y})
            print("Step " + str(step) + ", Minibatch Loss= " + "{:.4f}".format(loss))
    print("Optimization Finished!")
