# tfdist-test: ranks=2 disjoint=yes coverage=0.9
"""GradientTape loop cutting batches by offsets from arrays reshuffled every
epoch by one unseeded permutation, reassigned as a pair (``x, y = x[perm],
y[perm]``: the custom-loop shape of many tutorials). Horovod: each rank
reshuffles its own share. tf.distribute: every worker must hold the same
order for each replica to cut its own batch of it; NumPy is seeded the same
on every worker before the loop (before, the file was refused: 'made anew
inside the training loops')."""
import numpy as np
import tensorflow as tf


def label_of(sample):
    return np.array([sample.sum() > 5.0], dtype=np.float32)


x_train = np.random.RandomState(0).rand(640, 10).astype("float32")
y_train = np.array([label_of(s)[0] for s in x_train], dtype="float32")
batch_size = 32
num_batches = len(x_train) // batch_size
model = tf.keras.Sequential([tf.keras.layers.Dense(16, activation="relu"), tf.keras.layers.Dense(1)])
opt = tf.keras.optimizers.SGD(0.1)
loss_object = tf.keras.losses.BinaryCrossentropy(from_logits=True)
for epoch in range(3):
    perm = np.random.permutation(len(x_train))
    x_train, y_train = x_train[perm], y_train[perm]
    for b in range(num_batches):
        xb = x_train[b * batch_size:(b + 1) * batch_size]
        yb = y_train[b * batch_size:(b + 1) * batch_size]
        with tf.GradientTape() as tape:
            loss = loss_object(yb[:, None], model(xb, training=True))
        grads = tape.gradient(loss, model.trainable_weights)
        opt.apply_gradients(zip(grads, model.trainable_weights))
    print("epoch", epoch, float(loss))
