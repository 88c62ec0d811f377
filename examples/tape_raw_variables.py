"""Logistic regression written with raw tf.Variables and an eager GradientTape loop.

No Keras layers: the weights are two tf.Variables, the loss is written out by
hand, and a Keras SGD optimizer applies the gradients. The synthetic data is
labelled by a fixed random hyperplane. The learned parameters are written
to ./logreg_params.npz.
"""
import os

import numpy as np
import tensorflow as tf

N = 1003
DIM = 5
BATCH = 32
EPOCHS = int(os.environ.get("TFDIST_BENCH_EPOCHS", "4"))
lr = 0.5

np.random.seed(7)
tf.random.set_seed(7)

true_w = np.random.randn(DIM, 1).astype(np.float32)
true_b = 0.3
X = np.random.randn(N, DIM).astype(np.float32)
Y = ((X @ true_w + true_b) > 0).astype(np.float32)

train_data = tf.data.Dataset.from_tensor_slices((X, Y)).shuffle(N, seed=7).batch(BATCH)

# model parameters
w = tf.Variable(tf.zeros([DIM, 1]), name="w")
b = tf.Variable(tf.zeros([1]), name="b")
params = [w, b]

opt = tf.keras.optimizers.SGD(learning_rate=lr)


def model(x):
    return tf.matmul(x, w) + b


def compute_loss(logits, labels):
    return tf.reduce_mean(tf.nn.sigmoid_cross_entropy_with_logits(labels=labels, logits=logits))


step = 0
for epoch in range(EPOCHS):
    for xb, yb in train_data:
        with tf.GradientTape() as tape:
            loss = compute_loss(model(xb), yb)
        grads = tape.gradient(loss, params)
        opt.apply_gradients(zip(grads, params))
        if step % 20 == 0:
            print("step %d loss %.4f" % (step, loss.numpy()))
        step += 1

full_loss = compute_loss(model(X), Y)
accuracy = tf.reduce_mean(tf.cast(tf.equal(tf.cast(model(X) > 0, tf.float32), Y), tf.float32))
print("trained for %d steps, accuracy %.3f" % (step, accuracy.numpy()))
print("final loss %.4f" % full_loss.numpy())

np.savez("./logreg_params.npz", w=w.numpy(), b=b.numpy())
