# tfdist-test: ranks=2,3 disjoint=yes coverage=0.9
"""TF1 trained on a list of mini-batches a helper of the script builds anew
every epoch, shuffled with NumPy's global generator and no seed (the
deep-learning course shape: ``minibatches = random_mini_batches(X, Y, 64)``
then ``for minibatch in minibatches:``). tfdist cannot count the list: each
rank takes every N-th mini-batch in whole rounds. Shares of the same order
are disjoint only if every rank shuffles the same way: NumPy is seeded the
same on every rank before the training function (without it, the first
epoch's shares overlap and ``disjoint=yes`` fails)."""
import math

import numpy as np
import tensorflow.compat.v1 as tf

tf.disable_v2_behavior()


def label_of(sample):
    return np.array([float(sample[0] + sample[2] > 1.0)], dtype=np.float32)


def random_mini_batches(X, Y, mini_batch_size=64):
    m = X.shape[0]
    permutation = list(np.random.permutation(m))
    shuffled_X = X[permutation]
    shuffled_Y = Y[permutation]
    batches = []
    for k in range(math.floor(m / mini_batch_size)):
        batches.append((shuffled_X[k * mini_batch_size:(k + 1) * mini_batch_size],
                        shuffled_Y[k * mini_batch_size:(k + 1) * mini_batch_size]))
    return batches


rows = np.random.RandomState(3).rand(384, 4).astype(np.float32)
targets = np.array([label_of(r) for r in rows], dtype=np.float32)


def model(X_train, Y_train, learning_rate=0.1, num_epochs=3, minibatch_size=32):
    X = tf.placeholder(tf.float32, [None, 4], name="X")
    Y = tf.placeholder(tf.float32, [None, 1], name="Y")
    W = tf.get_variable("W", [4, 1], initializer=tf.zeros_initializer())
    b = tf.get_variable("b", [1], initializer=tf.zeros_initializer())
    logits = tf.matmul(X, W) + b
    cost = tf.reduce_mean(tf.nn.sigmoid_cross_entropy_with_logits(logits=logits, labels=Y))
    optimizer = tf.train.GradientDescentOptimizer(learning_rate=learning_rate).minimize(cost)
    with tf.Session() as sess:
        sess.run(tf.global_variables_initializer())
        for epoch in range(num_epochs):
            epoch_cost = 0.
            minibatches = random_mini_batches(X_train, Y_train, minibatch_size)
            for minibatch in minibatches:
                (minibatch_X, minibatch_Y) = minibatch
                _, minibatch_cost = sess.run([optimizer, cost], feed_dict={X: minibatch_X, Y: minibatch_Y})
                epoch_cost += minibatch_cost / len(minibatches)
            print("Cost after epoch %i: %f" % (epoch, epoch_cost))
        return sess.run(W)


parameters = model(rows, targets)
