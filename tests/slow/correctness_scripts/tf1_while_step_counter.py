# tfdist-test: disjoint=yes coverage=0.9
"""TF1 `while step < MAX_STEPS` counting its own steps with `step += 1`;
offsets (step * BATCH) % (len(features) - BATCH)."""
import numpy as np
import tensorflow as tf

tf.compat.v1.disable_eager_execution()


def label_of(sample):
    return np.int64(int(sample[0] * 1000) % 4)


tf.compat.v1.set_random_seed(21)
x = tf.compat.v1.placeholder(tf.float32, [None, 16])
y = tf.compat.v1.placeholder(tf.int64, [None])
hidden = tf.compat.v1.layers.dense(x, 16, activation=tf.nn.relu)
logits = tf.compat.v1.layers.dense(hidden, 4)
loss = tf.compat.v1.losses.sparse_softmax_cross_entropy(y, logits)
train_op = tf.compat.v1.train.AdamOptimizer(0.01).minimize(loss)


def make_data(n=600, seed=1):
    rng = np.random.RandomState(seed)
    features = rng.rand(n, 16).astype(np.float32)
    targets = (features[:, 0] * 1000).astype(np.int64) % 4
    return features, targets


features, targets = make_data()

MAX_STEPS = 60
BATCH = 20

sess = tf.compat.v1.Session()
sess.run(tf.compat.v1.global_variables_initializer())
step = 0
while step < MAX_STEPS:
    start = (step * BATCH) % (len(features) - BATCH)
    batch_x = features[start:start + BATCH]
    batch_y = targets[start:start + BATCH]
    sess.run(train_op, feed_dict={x: batch_x, y: batch_y})
    step += 1
print("done after", step, "steps")
sess.close()
