"""TF1 graph-mode training: a plain Session loop, then MonitoredTrainingSession.

Writes the final trainable variable values it saw (in graph order) to
final_values.npz so a test can compare them with the probe's checksum.
"""
import sys

import numpy as np
import tensorflow.compat.v1 as tf

tf.disable_v2_behavior()
out = sys.argv[1] if len(sys.argv) > 1 else "final_values.npz"
rng = np.random.RandomState(0)
X = rng.randn(32, 4).astype("float32")
Y = X @ np.array([[1.0], [-2.0], [0.5], [3.0]], "float32")
finals = []

# Graph 1: plain Session, 7 training runs plus runs that do not train.
with tf.Graph().as_default():
    tf.set_random_seed(1)
    x = tf.placeholder(tf.float32, [None, 4])
    y = tf.placeholder(tf.float32, [None, 1])
    w = tf.get_variable("w", [4, 1])
    b = tf.get_variable("b", [1], initializer=tf.zeros_initializer())
    loss = tf.reduce_mean(tf.square(tf.matmul(x, w) + b - y))
    gs = tf.train.get_or_create_global_step()
    train_op = tf.train.GradientDescentOptimizer(0.05).minimize(loss, global_step=gs)
    with tf.Session() as sess:
        sess.run(tf.global_variables_initializer())
        for _ in range(7):
            sess.run(train_op, {x: X, y: Y})
        sess.run(loss, {x: X, y: Y})            # evaluation: not a step
        finals += sess.run([w, b])

# Graph 2: MonitoredTrainingSession with a grouped train op, stops at step 5.
with tf.Graph().as_default():
    tf.set_random_seed(2)
    x = tf.placeholder(tf.float32, [None, 4])
    y = tf.placeholder(tf.float32, [None, 1])
    w = tf.get_variable("w", [4, 1])
    b = tf.get_variable("b", [1], initializer=tf.zeros_initializer())
    loss = tf.reduce_mean(tf.square(tf.matmul(x, w) + b - y))
    tf.summary.scalar("loss", loss)
    gs = tf.train.get_or_create_global_step()
    opt = tf.train.AdamOptimizer(0.01)
    train_op = tf.group(opt.minimize(loss, global_step=gs), name="train_group")

    class GrabFinalValues(tf.train.SessionRunHook):
        def end(self, session):
            finals.extend(session.run([w, b]))

    hooks = [tf.train.StopAtStepHook(last_step=5), GrabFinalValues()]
    with tf.train.MonitoredTrainingSession(checkpoint_dir="mts_ckpt", hooks=hooks,
                                           save_summaries_steps=1) as sess:
        while not sess.should_stop():
            sess.run(train_op, {x: X, y: Y})

np.savez(out, *finals)
print("done", [v.shape for v in finals])
