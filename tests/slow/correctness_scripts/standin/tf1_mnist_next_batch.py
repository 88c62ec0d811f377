# tfdist-test: standin=mnist
"""TF1 MNIST tutorial shape: input_data.read_data_sets + mnist.train.next_batch
in a Session loop (softmax regression).  Needs the MNIST stand-in
(tests/slow/support/mnist_standin on PYTHONPATH) on TensorFlow 2.x."""
import numpy as np
import tensorflow.compat.v1 as tf
from tensorflow.examples.tutorials.mnist import input_data

tf.disable_v2_behavior()


def label_of(sample):
    from tfdist_mnist_standin import label_of as standin_label
    return np.eye(10)[standin_label(sample)]


np.random.seed(0)
mnist = input_data.read_data_sets("/tmp/data/", one_hot=True, seed=3)

x = tf.placeholder(tf.float32, [None, 784])
y_ = tf.placeholder(tf.float32, [None, 10])
W = tf.Variable(tf.zeros([784, 10]))
b = tf.Variable(tf.zeros([10]))
y = tf.matmul(x, W) + b
cross_entropy = tf.reduce_mean(tf.nn.softmax_cross_entropy_with_logits_v2(labels=y_, logits=y))
train_step = tf.train.GradientDescentOptimizer(0.5).minimize(cross_entropy)

with tf.Session() as sess:
    sess.run(tf.global_variables_initializer())
    for _ in range(20):
        batch_xs, batch_ys = mnist.train.next_batch(100)
        sess.run(train_step, feed_dict={x: batch_xs, y_: batch_ys})
    correct = tf.equal(tf.argmax(y, 1), tf.argmax(y_, 1))
    accuracy = tf.reduce_mean(tf.cast(correct, tf.float32))
    print("accuracy", sess.run(accuracy, feed_dict={x: mnist.test.images, y_: mnist.test.labels}))
