# tfdist-test: ranks=2 disjoint=no coverage=0.8 standin=mnist
"""TF1 MNIST tutorial shape: each step reshapes the drawn batch image by
image (a comprehension), decays the learning rate with math.exp of the
step counter and feeds it to a placeholder.  The fed images are computed
from next_batch's draw and the rate is a schedule, not data: each rank
draws its own stream (NumPy re-seeded by rank) with 1/N of the steps.  The
graph seed makes read_data_sets seed NumPy alike on every rank, so without
the re-seeding every rank would train on the same batches."""
import math

import numpy as np
import tensorflow.compat.v1 as tf
from tensorflow.examples.tutorials.mnist import input_data

tf.disable_v2_behavior()
tf.set_random_seed(1)


def label_of(sample):
    from tfdist_mnist_standin import label_of as standin_label
    return np.eye(10)[standin_label(sample)]


mnist = input_data.read_data_sets("/tmp/data", one_hot=True)
batch_size = 50
training_epochs = 2

X = tf.placeholder(tf.float32, [None, 28, 28, 1])
Y_ = tf.placeholder(tf.float32, [None, 10])
lr = tf.placeholder(tf.float32)
W = tf.Variable(tf.zeros([784, 10]))
b = tf.Variable(tf.zeros([10]))
logits = tf.matmul(tf.reshape(X, [-1, 784]), W) + b
cross_entropy = tf.reduce_mean(tf.nn.softmax_cross_entropy_with_logits_v2(logits=logits, labels=Y_))
train_step = tf.train.GradientDescentOptimizer(lr).minimize(cross_entropy)

with tf.Session() as sess:
    sess.run(tf.global_variables_initializer())
    for epoch in range(training_epochs):
        batch_count = int(mnist.train.num_examples / batch_size)
        for i in range(batch_count):
            batch_x, batch_y = mnist.train.next_batch(batch_size)
            images = np.array([img.reshape(28, 28, 1) for img in batch_x])
            learning_rate = 0.01 + 0.09 * math.exp(-i / 20)
            sess.run(train_step, {X: images, Y_: batch_y, lr: learning_rate})
        print("Epoch:", epoch, sess.run(cross_entropy, {X: images, Y_: batch_y}))
