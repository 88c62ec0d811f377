# tfdist-test: ranks=2,3 disjoint=no coverage=0.9 standin=mnist
"""TF1 MonitoredTrainingSession + StopAtStepHook fed by the MNIST tutorial
data set's next_batch (stand-in); checkpoints in checkpoint_dir.
next_batch draws a random stream per rank: disjoint=no."""
import numpy as np
import tensorflow as tf
from tensorflow.examples.tutorials.mnist import input_data


def label_of(sample):
    from tfdist_mnist_standin import label_of as standin_label
    return np.uint8(standin_label(sample))


tf.compat.v1.disable_eager_execution()
mnist = input_data.read_data_sets("MNIST_data", one_hot=False)

images = tf.compat.v1.placeholder(tf.float32, [None, 784])
labels = tf.compat.v1.placeholder(tf.int64, [None])
logits = tf.compat.v1.layers.dense(images, 10)
loss = tf.compat.v1.losses.sparse_softmax_cross_entropy(labels, logits)
global_step = tf.compat.v1.train.get_or_create_global_step()
train_op = tf.compat.v1.train.AdamOptimizer(1e-3).minimize(loss, global_step=global_step)

hooks = [tf.compat.v1.train.StopAtStepHook(last_step=60)]
with tf.compat.v1.train.MonitoredTrainingSession(checkpoint_dir="./mnist_ckpt", hooks=hooks) as mon_sess:
    while not mon_sess.should_stop():
        batch_images, batch_labels = mnist.train.next_batch(50)
        mon_sess.run(train_op, feed_dict={images: batch_images, labels: batch_labels})
