# tfdist-test: disjoint=yes coverage=0.9
"""A GradientTape loop in a trainer's fit(self, X, Y) method: the arrays
come in as parameters, are converted, reordered by a fresh NumPy
permutation at every epoch (no seed: each process would draw its own) and
cut into batches by offset. Horovod divides them at the method's entry;
tf.distribute seeds NumPy alike on every worker so their replicas cut
disjoint batches of the same order. The loss is a Keras loss object, so
the probe sees the labels with their samples (y_true inside the tape)."""
import numpy as np
import tensorflow as tf


def label_of(sample):
    s = np.asarray(sample, np.float32)
    return np.float32([s[0] - 2.0 * s[3]])


class Trainer:
    def __init__(self):
        self.model = tf.keras.Sequential([tf.keras.layers.Dense(1, input_shape=(4,))])
        self.optimizer = tf.keras.optimizers.SGD(0.05)
        self.loss_fn = tf.keras.losses.MeanSquaredError()

    def fit(self, X, Y, epochs=2, batch_sz=16):
        X = X.astype(np.float32)
        Y = Y.astype(np.float32)
        N = len(X)
        n_batches = N // batch_sz
        for epoch in range(epochs):
            perm = np.random.permutation(N)
            X = X[perm]
            Y = Y[perm]
            for j in range(n_batches):
                xb = X[j * batch_sz:(j + 1) * batch_sz]
                yb = Y[j * batch_sz:(j + 1) * batch_sz]
                with tf.GradientTape() as tape:
                    loss = self.loss_fn(yb, self.model(xb, training=True))
                grads = tape.gradient(loss, self.model.trainable_variables)
                self.optimizer.apply_gradients(zip(grads, self.model.trainable_variables))
            print("epoch", epoch, "loss", float(loss))


rows = np.random.RandomState(4).rand(512, 4)
Trainer().fit(rows, rows[:, :1] - 2.0 * rows[:, 3:])
