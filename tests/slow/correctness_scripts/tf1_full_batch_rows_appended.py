# tfdist-test: disjoint=yes coverage=0.9 steps=all
"""TF1 full-batch training on windows of a sequence, built by appending
rows in a loop (the char-RNN tutorial shape): ``dataX = []`` then
``dataX.append(x)`` per window, the whole of both lists fed at every step,
and ``batch_size = len(dataX)`` baked into the graph's shapes. The lists
are final only after the loop: each rank's share is taken there, and the
batch size in the shapes is that share's."""
import numpy as np
import tensorflow as tf

tf.compat.v1.disable_eager_execution()


def label_of(sample):
    return np.array([(int(v) * 3 + 1) % 7 for v in sample], dtype=np.int32)


sequence = [(i * 5 + i // 3) % 7 for i in range(130)]
seq_len = 6
num_classes = 7

dataX = []
dataY = []
for i in range(0, len(sequence) - seq_len):
    x = sequence[i:i + seq_len]
    y = [(v * 3 + 1) % 7 for v in x]
    dataX.append(x)
    dataY.append(y)

batch_size = len(dataX)

tf.compat.v1.set_random_seed(7)
X = tf.compat.v1.placeholder(tf.int32, [None, seq_len])
Y = tf.compat.v1.placeholder(tf.int32, [None, seq_len])
X_one_hot = tf.one_hot(X, num_classes)
flat = tf.reshape(X_one_hot, [batch_size * seq_len, num_classes])
logits = tf.compat.v1.layers.dense(flat, num_classes)
logits = tf.reshape(logits, [batch_size, seq_len, num_classes])
weights = tf.ones([batch_size, seq_len])
loss = tf.reduce_mean(tf.compat.v1.losses.sparse_softmax_cross_entropy(Y, logits, weights=weights))
train_op = tf.compat.v1.train.AdamOptimizer(0.05).minimize(loss)

with tf.compat.v1.Session() as sess:
    sess.run(tf.compat.v1.global_variables_initializer())
    for i in range(40):
        _, l = sess.run([train_op, loss], feed_dict={X: dataX, Y: dataY})
        if i % 10 == 0:
            print(i, l)
