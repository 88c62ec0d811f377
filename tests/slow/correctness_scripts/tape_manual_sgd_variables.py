# tfdist-test: samples=none
"""A GradientTape step written by hand, as "from scratch" chapters do: the
weights are tf.Variables drawn at random (no seed: each rank draws its own,
so only the broadcast makes them equal), the gradients applied with
w.assign_sub(lr * dw), no optimizer. Converted for Horovod: the tape
averages the gradients, the variables are broadcast from rank 0 before the
loop, lr is scaled and the dataset sharded. tf.distribute refuses it (an
optimizer must aggregate the replicas' gradients): REFUSED there."""
import numpy as np
import tensorflow as tf


def label_of(sample):
    return np.int64(int(sample[5] * 1000) % 3)


rng = np.random.RandomState(21)
x_train = rng.rand(480, 8).astype("float32")
y_train = np.array([label_of(s) for s in x_train], dtype=np.int64)
train_db = tf.data.Dataset.from_tensor_slices((x_train, y_train)).batch(24)

w1 = tf.Variable(tf.random.truncated_normal([8, 16], stddev=0.1))
b1 = tf.Variable(tf.zeros([16]))
w2 = tf.Variable(tf.random.truncated_normal([16, 3], stddev=0.1))
b2 = tf.Variable(tf.zeros([3]))
lr = 0.05

for epoch in range(2):
    for step, (x, y) in enumerate(train_db):
        with tf.GradientTape() as tape:
            h1 = tf.nn.relu(x @ w1 + b1)
            out = h1 @ w2 + b2
            loss = tf.reduce_mean(tf.keras.losses.sparse_categorical_crossentropy(y, out, from_logits=True))
        grads = tape.gradient(loss, [w1, b1, w2, b2])
        w1.assign_sub(lr * grads[0])
        b1.assign_sub(lr * grads[1])
        w2.assign_sub(lr * grads[2])
        b2.assign_sub(lr * grads[3])
        if step % 5 == 0:
            print(epoch, step, "loss:", float(loss))
