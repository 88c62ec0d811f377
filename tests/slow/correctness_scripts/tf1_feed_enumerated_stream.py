# tfdist-test: ranks=2,3 disjoint=yes coverage=0.9
"""TF1 fed one sample a step from what a function of the script yields
(``for ix, t in enumerate(vectors(texts))``), its label picked by the
number enumerate() gives it (``labels[ix]``: the bag-of-words cookbook
shape). tfdist cannot count what a generator yields: each rank takes every
N-th (number, sample) pair in whole rounds, so the number is still the
sample's position in the original order and the label fed is its own."""
import numpy as np
import tensorflow as tf

tf.compat.v1.disable_eager_execution()


def label_of(sample):
    return np.array([int(sample[0] * 1000) % 2], dtype=np.float32)


def vectors(rows):
    for row in rows:
        yield row * 1.0


rng = np.random.RandomState(6)
texts = rng.rand(120, 4).astype(np.float32)
labels = np.array([label_of(t)[0] for t in texts], dtype=np.float32)
tf.compat.v1.set_random_seed(2)
x_data = tf.compat.v1.placeholder(tf.float32, [None, 4])
y_target = tf.compat.v1.placeholder(tf.float32, [None, 1])
A = tf.Variable(tf.zeros([4, 1]))
b = tf.Variable(tf.zeros([1, 1]))
logits = tf.matmul(x_data, A) + b
loss = tf.reduce_mean(tf.nn.sigmoid_cross_entropy_with_logits(labels=y_target, logits=logits))
train_step = tf.compat.v1.train.GradientDescentOptimizer(0.05).minimize(loss)

with tf.compat.v1.Session() as sess:
    sess.run(tf.compat.v1.global_variables_initializer())
    for ix, t in enumerate(vectors(texts)):
        y_data = [[labels[ix]]]
        sess.run(train_step, feed_dict={x_data: t[None], y_target: y_data})
        if ix % 30 == 0:
            print(ix, sess.run(loss, feed_dict={x_data: t[None], y_target: y_data}))
