# tfdist-test: ranks=2 disjoint=no coverage=0.9
"""GradientTape loop drawing each step's batch by random indices into NumPy
arrays (with replacement, NumPy's global generator seeded by the script, so
every worker starts from the same stream). The step is a function given the
indexed arrays.  Under tf.distribute every replica draws its own batch of the
user's size (NumPy re-seeded per worker), the loop runs 1/N of the steps."""
import numpy as np
import tensorflow as tf


def label_of(sample):
    return np.int64(int(sample[3] * 1000) % 3)


tf.keras.utils.set_random_seed(21)
x = np.random.rand(480, 6).astype("float32")
y = (x[:, 3] * 1000).astype("int64") % 3
n = len(x)
bs = 24

model = tf.keras.Sequential([tf.keras.layers.Dense(3, input_shape=(6,))])
opt = tf.keras.optimizers.SGD(0.05)
loss_fn = tf.keras.losses.SparseCategoricalCrossentropy(from_logits=True)


def train_step(xb, yb):
    with tf.GradientTape() as tape:
        loss = loss_fn(yb, model(xb, training=True))
    grads = tape.gradient(loss, model.trainable_variables)
    opt.apply_gradients(zip(grads, model.trainable_variables))
    return loss


for step in range(240):
    idx = np.random.choice(n, bs)
    loss = train_step(x[idx], y[idx])
    if step % 60 == 0:
        print("step", step, float(loss))
