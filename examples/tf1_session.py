"""TF1-style graph training with tf.Session (via tf.compat.v1).

A one-hidden-layer network regresses a fixed nonlinear target
y = tanh(x . a) + 0.5 * (x . c) on synthetic data. The input pipeline is a
tf.data one-shot iterator, the learning rate decays exponentially with the
global step, and a Saver writes ./checkpoints/model.ckpt-<step> at the end.
"""
import math
import os

import numpy as np
import tensorflow.compat.v1 as tf

tf.disable_v2_behavior()

NUM_EXAMPLES = 1003
INPUT_DIM = 6
HIDDEN = 32
BATCH_SIZE = 32
EPOCHS = int(os.environ.get("TFDIST_BENCH_EPOCHS", "4"))
NUM_STEPS = EPOCHS * math.ceil(NUM_EXAMPLES / BATCH_SIZE)
BASE_LR = 0.05
PRINT_EVERY = 20


def make_data():
    rng = np.random.RandomState(11)
    x = rng.randn(NUM_EXAMPLES, INPUT_DIM).astype(np.float32)
    a = rng.randn(INPUT_DIM, 1).astype(np.float32) / np.sqrt(INPUT_DIM)
    c = rng.randn(INPUT_DIM, 1).astype(np.float32) / np.sqrt(INPUT_DIM)
    y = np.tanh(x @ a) + 0.5 * (x @ c)
    return x, y.astype(np.float32)


def main():
    tf.set_random_seed(11)
    x_data, y_data = make_data()

    dataset = tf.data.Dataset.from_tensor_slices((x_data, y_data)).shuffle(1024, seed=11).batch(BATCH_SIZE).repeat()
    features, targets = tf.data.make_one_shot_iterator(dataset).get_next()

    # Model: one hidden tanh layer.
    w1 = tf.get_variable("w1", [INPUT_DIM, HIDDEN], initializer=tf.glorot_uniform_initializer())
    b1 = tf.get_variable("b1", [HIDDEN], initializer=tf.zeros_initializer())
    w2 = tf.get_variable("w2", [HIDDEN, 1], initializer=tf.glorot_uniform_initializer())
    b2 = tf.get_variable("b2", [1], initializer=tf.zeros_initializer())
    hidden = tf.nn.tanh(tf.matmul(features, w1) + b1)
    predictions = tf.matmul(hidden, w2) + b2
    loss = tf.reduce_mean(tf.square(predictions - targets))

    global_step = tf.train.get_or_create_global_step()
    lr = tf.train.exponential_decay(BASE_LR, global_step, decay_steps=50, decay_rate=0.9, staircase=True)
    train_op = tf.train.MomentumOptimizer(lr, 0.9).minimize(loss, global_step=global_step)

    saver = tf.train.Saver()
    with tf.Session() as sess:
        sess.run(tf.global_variables_initializer())
        for step in range(NUM_STEPS):
            _, loss_value = sess.run([train_op, loss])
            if step % PRINT_EVERY == 0:
                print("step %d loss %.4f" % (step, loss_value))
        print("final loss %.4f" % loss_value)
        path = saver.save(sess, "./checkpoints/model.ckpt", global_step=global_step)
        print("saved", path)


if __name__ == "__main__":
    main()
