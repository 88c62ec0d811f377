"""tf1_derived_labels.py converted WRONG, reproduced by hand: the output an
earlier tfdist wrote.  data is sliced right after its own assignment, then the
labels are derived from the already-sliced data and sliced a second time, so
rank r feeds sample i with the label of sample r + size*i (pairs broken), and
n = labels.shape[0] is a quarter of the samples instead of a half on 2 ranks.
It runs and exits 0: only a check of the samples fed shows the damage."""
import numpy as np
import tensorflow.compat.v1 as tf
import horovod.tensorflow as hvd

# Horovod: initialize Horovod.
hvd.init()

tf.disable_v2_behavior()

BATCH, EPOCHS = 32, 2

rng = np.random.RandomState(0)
data = rng.rand(1024, 8).astype(np.float32)
# Horovod: each rank trains on its own equal share of the samples.
data = data[hvd.rank()::hvd.size()][:len(data) // hvd.size()]
labels = (data[:, 0] * 1000).astype(np.int64) % 10   # derived from data
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
