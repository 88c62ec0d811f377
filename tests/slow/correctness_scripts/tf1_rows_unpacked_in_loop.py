# tfdist-test: disjoint=yes coverage=0.9
"""TF1 regression fed one row at a time by ``for x, y in data:``: each row
of one array holds a sample and its label, unpacked by the loop (the
Stanford CS20 linear-regression shape, with the array returned by a reader
function). The array is sliced by rank where it is bound, so each sample
keeps its label and the loop, iterating the sliced array, runs 1/N of the
steps without a count to divide. (Each row is fed as a batch of one,
``[x]``: tfdist's probe records fed samples by their leading axis.)"""
import numpy as np
import tensorflow as tf

tf.compat.v1.disable_eager_execution()


def label_of(sample):
    return np.float32(int(float(sample) * 1000) % 4)


def read_pairs(n):
    xs = np.random.RandomState(5).rand(n).astype(np.float32)
    return np.stack([xs, np.array([label_of(x) for x in xs], dtype=np.float32)], axis=1), n


tf.compat.v1.set_random_seed(7)
data, n_samples = read_pairs(240)
X = tf.compat.v1.placeholder(tf.float32, [None], name='X')
Y = tf.compat.v1.placeholder(tf.float32, [None], name='Y')
w = tf.compat.v1.get_variable('weights', initializer=tf.constant(0.0))
b = tf.compat.v1.get_variable('bias', initializer=tf.constant(0.0))
loss = tf.reduce_mean(tf.square(Y - (w * X + b)), name='loss')
optimizer = tf.compat.v1.train.GradientDescentOptimizer(learning_rate=0.01).minimize(loss)

with tf.compat.v1.Session() as sess:
    sess.run(tf.compat.v1.global_variables_initializer())
    for i in range(2):
        total_loss = 0
        for x, y in data:
            _, l = sess.run([optimizer, loss], feed_dict={X: [x], Y: [y]})
            total_loss += l
        print('Epoch {0}: {1}'.format(i, total_loss / n_samples))
    w_out, b_out = sess.run([w, b])
