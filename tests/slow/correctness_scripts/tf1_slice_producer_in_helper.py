# tfdist-test: ranks=2 samples=none
"""TF1 input from a queue a helper function builds and returns: samples
and labels sliced by tf.train.slice_input_producer (which shuffles them,
no seed) and batched by tf.train.batch; the loss reaches the optimizer
through a function parameter (``def train_step(loss_value)``). Every rank
draws its own order and runs 1/size of the steps. The probe records fed
samples only (none are fed here): variables, steps and files are checked."""
import numpy as np
import tensorflow.compat.v1 as tf

tf.disable_v2_behavior()


def label_of(sample):
    return np.float32(sample[0] - sample[2])


def read_samples(batch_size):
    rows = np.random.RandomState(2).rand(400, 3).astype(np.float32)
    labels = np.array([label_of(r) for r in rows], dtype=np.float32)
    sample, label = tf.train.slice_input_producer([tf.constant(rows), tf.constant(labels)])
    x, y = tf.train.batch([sample, label], batch_size=batch_size, capacity=batch_size * 8)
    return x, y


def train_step(loss_value):
    return tf.train.GradientDescentOptimizer(0.05).minimize(loss_value)


X, Y = read_samples(10)
W = tf.Variable(tf.zeros([3, 1]))
b = tf.Variable(tf.zeros([1]))
cost = tf.reduce_mean(tf.square(tf.matmul(X, W) + b - tf.reshape(Y, [-1, 1])))
train = train_step(cost)
with tf.Session() as sess:
    sess.run(tf.global_variables_initializer())
    coord = tf.train.Coordinator()
    threads = tf.train.start_queue_runners(sess=sess, coord=coord)
    for step in range(200):
        _, c = sess.run([train, cost])
        if step % 50 == 0:
            print(step, c)
    coord.request_stop()
    coord.join(threads)
