"""Hand-written Horovod TF1 script: tf.compat.v1 graph, DistributedOptimizer,
BroadcastGlobalVariablesHook and MonitoredTrainingSession (checkpoints and
summaries on rank 0 only).  Each rank starts from a different random seed, so
only the broadcast makes the ranks agree."""
import numpy as np
import tensorflow.compat.v1 as tf
import horovod.tensorflow as hvd

tf.disable_v2_behavior()
hvd.init()
rng = np.random.RandomState(0)
X = rng.randn(64, 4).astype("float32")
Y = X @ np.array([[1.0], [-2.0], [0.5], [3.0]], "float32")
X, Y = X[hvd.rank()::hvd.size()], Y[hvd.rank()::hvd.size()]  # each rank its own share

tf.set_random_seed(1 + hvd.rank())
x = tf.placeholder(tf.float32, [None, 4])
y = tf.placeholder(tf.float32, [None, 1])
w = tf.get_variable("w", [4, 1])
b = tf.get_variable("b", [1], initializer=tf.zeros_initializer())
loss = tf.reduce_mean(tf.square(tf.matmul(x, w) + b - y))
gs = tf.train.get_or_create_global_step()
opt = hvd.DistributedOptimizer(tf.train.AdamOptimizer(0.01 * hvd.size()))
train_op = opt.minimize(loss, global_step=gs)
hooks = [hvd.BroadcastGlobalVariablesHook(0), tf.train.StopAtStepHook(last_step=20 // hvd.size())]
with tf.train.MonitoredTrainingSession(checkpoint_dir="ckpt" if hvd.rank() == 0 else None,
                                       hooks=hooks) as sess:
    i = 0
    while not sess.should_stop():
        lo = (i * 8) % len(X)
        sess.run(train_op, {x: X[lo:lo + 8], y: Y[lo:lo + 8]})
        i += 1
