"""TF1-style training with tf.train.MonitoredTrainingSession (via tf.compat.v1).

Softmax regression on a synthetic 5-class problem (class = argmax of a fixed
random linear map of 12 features). Hooks stop training after NUM_STEPS and
log the loss; the session writes checkpoints and summaries to ./checkpoints.
"""
import os

import numpy as np
import tensorflow.compat.v1 as tf

tf.disable_v2_behavior()
tf.logging.set_verbosity(tf.logging.INFO)

NUM_EXAMPLES = 1003
NUM_FEATURES = 12
NUM_CLASSES = 5
BATCH_SIZE = 32
EPOCHS = int(os.environ.get("TFDIST_BENCH_EPOCHS", "4"))
NUM_STEPS = EPOCHS * ((NUM_EXAMPLES + BATCH_SIZE - 1) // BATCH_SIZE)

np.random.seed(5)
tf.set_random_seed(5)
rule = np.random.randn(NUM_FEATURES, NUM_CLASSES).astype(np.float32)
x_all = np.random.randn(NUM_EXAMPLES, NUM_FEATURES).astype(np.float32)
y_all = np.argmax(x_all @ rule, axis=1).astype(np.int64)

ds = tf.data.Dataset.from_tensor_slices((x_all, y_all))
ds = ds.shuffle(NUM_EXAMPLES, seed=5).batch(BATCH_SIZE).repeat()
x, y = tf.data.make_one_shot_iterator(ds).get_next()

W = tf.get_variable("weights", [NUM_FEATURES, NUM_CLASSES], initializer=tf.zeros_initializer())
bias = tf.get_variable("bias", [NUM_CLASSES], initializer=tf.zeros_initializer())
logits = tf.matmul(x, W) + bias
loss = tf.reduce_mean(tf.nn.sparse_softmax_cross_entropy_with_logits(labels=y, logits=logits))
tf.summary.scalar("loss", loss)

global_step = tf.train.get_or_create_global_step()
opt = tf.train.AdamOptimizer(0.01)
train_op = opt.minimize(loss, global_step=global_step)

hooks = [
    tf.train.StopAtStepHook(last_step=NUM_STEPS),
    tf.train.LoggingTensorHook({"step": global_step, "loss": loss}, every_n_iter=50),
]

with tf.train.MonitoredTrainingSession(checkpoint_dir="./checkpoints", hooks=hooks) as sess:
    while not sess.should_stop():
        _, step, loss_value = sess.run([train_op, global_step, loss])
        if step % 25 == 1:
            print("step %d loss %.4f" % (step, loss_value))

print("final loss %.4f" % loss_value)
