# tfdist-test: ranks=2,3 disjoint=yes
"""TF1 Session loop feeding NumPy slices at offsets; data and labels come
from one call (the labels are not derived from the data afterwards)."""
import numpy as np
import tensorflow.compat.v1 as tf

tf.disable_v2_behavior()

BATCH, EPOCHS = 32, 2


def label_of(sample):
    return np.int64(int(sample[0] * 1000) % 10)


def make_dataset(n, seed):
    rng = np.random.RandomState(seed)
    data = rng.rand(n, 8).astype(np.float32)
    return data, np.array([label_of(s) for s in data], dtype=np.int64)


data, labels = make_dataset(768, 0)
n = data.shape[0]

tf.set_random_seed(1)
x = tf.placeholder(tf.float32, [None, 8])
y = tf.placeholder(tf.int64, [None])
logits = tf.layers.dense(x, 10)
loss = tf.reduce_mean(tf.nn.sparse_softmax_cross_entropy_with_logits(labels=y, logits=logits))
train_op = tf.train.GradientDescentOptimizer(0.1).minimize(loss)
saver = tf.train.Saver()

with tf.Session() as sess:
    sess.run(tf.global_variables_initializer())
    for step in range(EPOCHS * n // BATCH):
        off = (step * BATCH) % n
        _, l = sess.run([train_op, loss], feed_dict={x: data[off:off + BATCH], y: labels[off:off + BATCH]})
        if step % 10 == 0:
            print(f"step {step} loss {l:.4f}")
    saver.save(sess, "ckpt/model.ckpt")
