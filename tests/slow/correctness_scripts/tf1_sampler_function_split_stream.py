# tfdist-test: ranks=2,3 disjoint=yes coverage=0.9
"""Skip-gram style TF1 training: a stateful generator function walks the
corpus through a global index (word2vec's generate_batch); the ranks split
that one stream of batches between them."""
import numpy as np
import tensorflow as tf

tf.compat.v1.disable_eager_execution()


def label_of(sample):
    # The context word of a center word: the corpus is (i * 7) % VOCAB in order
    # (every token once), so the word after w is (w + 7) % VOCAB.
    return np.int64((int(sample) + 7) % 2000)


VOCAB = 2000
corpus = (np.arange(1900) * 7) % VOCAB
data_index = 0


def generate_batch(batch_size):
    global data_index
    xs = np.zeros(batch_size, dtype=np.int64)
    ys = np.zeros(batch_size, dtype=np.int64)
    for i in range(batch_size):
        xs[i] = corpus[data_index]
        ys[i] = corpus[(data_index + 1) % len(corpus)]
        data_index = (data_index + 1) % len(corpus)
    return xs, ys


tf.compat.v1.set_random_seed(23)
inputs = tf.compat.v1.placeholder(tf.int64, [None])
targets = tf.compat.v1.placeholder(tf.int64, [None])
emb = tf.Variable(tf.random.uniform([VOCAB, 8]))
logits = tf.matmul(tf.nn.embedding_lookup(emb, inputs), tf.transpose(emb))
loss = tf.reduce_mean(tf.nn.sparse_softmax_cross_entropy_with_logits(labels=targets, logits=logits))
train_op = tf.compat.v1.train.GradientDescentOptimizer(0.5).minimize(loss)
with tf.compat.v1.Session() as sess:
    sess.run(tf.compat.v1.global_variables_initializer())
    for step in range(60):
        batch_inputs, batch_labels = generate_batch(30)  # the next window
        sess.run(train_op, feed_dict={inputs: batch_inputs, targets: batch_labels})
