"""Single-process TF1 script whose labels are derived from the data after
the data's assignment (the shape tfdist once converted wrong: see
tf1_derived_labels_wrong_hvd.py).  label = int(sample[0] * 1000) % 10."""
import numpy as np
import tensorflow.compat.v1 as tf

tf.disable_v2_behavior()

BATCH, EPOCHS = 32, 2

rng = np.random.RandomState(0)
data = rng.rand(1024, 8).astype(np.float32)
labels = (data[:, 0] * 1000).astype(np.int64) % 10   # derived from data
n = labels.shape[0]

tf.set_random_seed(1)
x = tf.placeholder(tf.float32, [None, 8])
y = tf.placeholder(tf.int64, [None])
logits = tf.layers.dense(x, 10)
loss = tf.reduce_mean(tf.nn.sparse_softmax_cross_entropy_with_logits(labels=y, logits=logits))
train_op = tf.train.GradientDescentOptimizer(0.1).minimize(loss)

with tf.Session() as sess:
    sess.run(tf.global_variables_initializer())
    for step in range(EPOCHS * n // BATCH):
        off = (step * BATCH) % (n - BATCH)
        _, l = sess.run([train_op, loss], feed_dict={x: data[off:off + BATCH], y: labels[off:off + BATCH]})
    print(f"final loss {l:.4f}")
