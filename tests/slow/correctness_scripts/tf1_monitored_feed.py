# tfdist-test: ranks=2 disjoint=yes
"""TF1 MonitoredTrainingSession with StopAtStepHook, feeding offset slices."""
import numpy as np
import tensorflow.compat.v1 as tf

tf.disable_v2_behavior()

BATCH = 16


def label_of(sample):
    return np.int64(int(sample[3] * 1000) % 5)


def build_arrays():
    rng = np.random.RandomState(5)
    feats = rng.rand(256, 6).astype(np.float32)
    return feats, np.array([label_of(f) for f in feats], dtype=np.int64)


feats, targets = build_arrays()
total = len(feats)

x = tf.placeholder(tf.float32, [None, 6])
y = tf.placeholder(tf.int64, [None])
logits = tf.layers.dense(x, 5)
loss = tf.reduce_mean(tf.nn.sparse_softmax_cross_entropy_with_logits(labels=y, logits=logits))
global_step = tf.train.get_or_create_global_step()
train_op = tf.train.AdamOptimizer(0.01).minimize(loss, global_step=global_step)

hooks = [tf.train.StopAtStepHook(last_step=32)]
step = 0
with tf.train.MonitoredTrainingSession(hooks=hooks) as sess:
    while not sess.should_stop():
        off = (step * BATCH) % total
        sess.run(train_op, feed_dict={x: feats[off:off + BATCH], y: targets[off:off + BATCH]})
        step += 1
print("steps", step)
