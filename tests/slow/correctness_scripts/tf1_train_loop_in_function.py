# tfdist-test: disjoint=yes coverage=0.9
"""TF1 step loop in a function called from main(), with the arrays passed as
parameters."""
import numpy as np
import tensorflow as tf

tf.compat.v1.disable_eager_execution()


def label_of(sample):
    return np.int64(int(sample[0] * 1000) % 4)


tf.compat.v1.set_random_seed(22)
x = tf.compat.v1.placeholder(tf.float32, [None, 16])
y = tf.compat.v1.placeholder(tf.int64, [None])
hidden = tf.compat.v1.layers.dense(x, 16, activation=tf.nn.relu)
logits = tf.compat.v1.layers.dense(hidden, 4)
loss = tf.compat.v1.losses.sparse_softmax_cross_entropy(y, logits)
train_op = tf.compat.v1.train.AdamOptimizer(0.01).minimize(loss)

STEPS = 60
BATCH = 20


def run_training(sess, data, labels):
    for step in range(STEPS):
        lo = (step * BATCH) % (len(data) - BATCH)
        sess.run(train_op, feed_dict={x: data[lo:lo + BATCH], y: labels[lo:lo + BATCH]})


def main():
    rng = np.random.RandomState(3)
    data = rng.rand(600, 16).astype(np.float32)
    labels = (data[:, 0] * 1000).astype(np.int64) % 4
    with tf.compat.v1.Session() as sess:
        sess.run(tf.compat.v1.global_variables_initializer())
        run_training(sess, data, labels)


if __name__ == "__main__":
    main()
