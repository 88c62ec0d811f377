# tfdist-test: ranks=2 disjoint=yes
"""TF1 Session loop: each epoch draws a permutation and feeds index batches."""
import numpy as np
import tensorflow.compat.v1 as tf

tf.disable_v2_behavior()

BATCH, EPOCHS = 32, 2


def label_of(sample):
    return np.float32(sample[1] - sample[0])


def load():
    rng = np.random.RandomState(1)
    inputs = rng.rand(512, 4).astype(np.float32)
    return inputs, (inputs[:, 1] - inputs[:, 0]).astype(np.float32)


train_x, train_y = load()
num_examples = len(train_x)

x = tf.placeholder(tf.float32, [None, 4])
y = tf.placeholder(tf.float32, [None])
w = tf.Variable(tf.zeros([4, 1]))
b = tf.Variable(tf.zeros([1]))
pred = tf.squeeze(tf.matmul(x, w) + b, axis=1)
loss = tf.reduce_mean(tf.square(pred - y))
train_op = tf.train.AdamOptimizer(0.01).minimize(loss)

order_rng = np.random.RandomState(7)
with tf.Session() as sess:
    sess.run(tf.global_variables_initializer())
    for epoch in range(EPOCHS):
        perm = order_rng.permutation(num_examples)
        for i in range(num_examples // BATCH):
            idx = perm[i * BATCH:(i + 1) * BATCH]
            _, l = sess.run([train_op, loss], feed_dict={x: train_x[idx], y: train_y[idx]})
        print(f"epoch {epoch} loss {l:.4f}")
