"""tf1_derived_labels.py converted correctly (by hand; the same text tfdist
writes once it slices data and labels together after the labels are derived):
every rank feeds its own 1/size of the samples, each with its own label."""
import numpy as np
import tensorflow.compat.v1 as tf
import horovod.tensorflow as hvd

# Horovod: initialize Horovod.
hvd.init()

tf.disable_v2_behavior()

BATCH, EPOCHS = 32, 2

rng = np.random.RandomState(0)
data = rng.rand(1024, 8).astype(np.float32)
labels = (data[:, 0] * 1000).astype(np.int64) % 10   # derived from data
# Horovod: each rank trains on its own equal share of the samples.
data = data[hvd.rank()::hvd.size()][:len(data) // hvd.size()]
labels = labels[hvd.rank()::hvd.size()][:len(labels) // hvd.size()]
n = labels.shape[0]

tf.set_random_seed(1)
x = tf.placeholder(tf.float32, [None, 8])
y = tf.placeholder(tf.int64, [None])
logits = tf.layers.dense(x, 10)
loss = tf.reduce_mean(tf.nn.sparse_softmax_cross_entropy_with_logits(labels=y, logits=logits))
train_op = hvd.DistributedOptimizer(tf.train.GradientDescentOptimizer(0.1 * hvd.size())).minimize(loss)

with tf.Session(config=tf.ConfigProto(gpu_options=tf.GPUOptions(visible_device_list=str(hvd.local_rank())))) as sess:
    sess.run(tf.global_variables_initializer())
    # Horovod: broadcast initial variables from rank 0.
    sess.run(hvd.broadcast_global_variables(0))
    for step in range(EPOCHS * n // BATCH):
        off = (step * BATCH) % (n - BATCH)
        _, l = sess.run([train_op, loss], feed_dict={x: data[off:off + BATCH], y: labels[off:off + BATCH]})
    if hvd.rank() == 0:
        print(f"final loss {l:.4f}")
