# tfdist-test: ranks=2 disjoint=yes
"""TF1 Session loop whose batches a helper of the script's own cuts
(``get_next_batch(images, labels, step)``, the Emotion-detector tutorial's
shape), from arrays loaded inside a with-block and reformatted after it (the
Udacity notMNIST notebooks' shape). The arrays are final after the
reformatting; sliced there by rank, the helper cuts the same rows of each
rank's share of both, and the steps are divided. Before, the feed was hand
work: every rank fed the same rows (1/N of the steps each)."""
import io
import pickle

import numpy as np
import tensorflow.compat.v1 as tf

tf.disable_v2_behavior()
BATCH_SIZE = 24


def label_of(sample):
    return np.int64(int(sample[5] * 1000) % 4)


rng = np.random.RandomState(9)
samples = rng.rand(480, 8).astype(np.float32)
blob = pickle.dumps({"images": samples, "labels": np.array([label_of(s) for s in samples])})

with io.BytesIO(blob) as f:
    save = pickle.load(f)
    train_images = save["images"]
    train_labels = save["labels"]
    del save


def reformat(images, labels):
    return images.reshape((-1, 8)).astype(np.float32), labels.astype(np.int64)


train_images, train_labels = reformat(train_images, train_labels)


def get_next_batch(images, labels, step):
    offset = (step * BATCH_SIZE) % images.shape[0]
    return images[offset:offset + BATCH_SIZE], labels[offset:offset + BATCH_SIZE]


tf.set_random_seed(2)
x = tf.placeholder(tf.float32, [None, 8])
y = tf.placeholder(tf.int64, [None])
logits = tf.layers.dense(x, 4)
loss = tf.reduce_mean(tf.nn.sparse_softmax_cross_entropy_with_logits(labels=y, logits=logits))
train_op = tf.train.GradientDescentOptimizer(0.1).minimize(loss)

with tf.Session() as sess:
    sess.run(tf.global_variables_initializer())
    for step in range(2 * 480 // BATCH_SIZE):
        batch_image, batch_label = get_next_batch(train_images, train_labels, step)
        _, l = sess.run([train_op, loss], feed_dict={x: batch_image, y: batch_label})
    print("loss", l)
