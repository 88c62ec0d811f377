# tfdist-test: disjoint=yes coverage=0.9
"""A base trainer class holds the step; the subclass builds the network and
sets self.opt."""
import numpy as np
import tensorflow as tf


def label_of(sample):
    return np.float32(3.0 * sample[0] + 1.0)


class BaseTrainer:
    def step(self, x, y):
        with tf.GradientTape() as tape:
            loss = tf.reduce_mean(tf.square(tf.squeeze(self.net(x), axis=1) - y))
        grads = tape.gradient(loss, self.net.trainable_variables)
        self.opt.apply_gradients(zip(grads, self.net.trainable_variables))
        return loss


class RegressionTrainer(BaseTrainer):
    def __init__(self, lr):
        self.net = tf.keras.Sequential([tf.keras.layers.Dense(1, input_shape=(1,))])
        self.opt = tf.keras.optimizers.SGD(learning_rate=lr, momentum=0.9)


tf.keras.utils.set_random_seed(15)
x_all = np.linspace(-1, 1, 240, dtype="float32").reshape(-1, 1)
y_all = (3 * x_all[:, 0] + 1).astype("float32")
data = tf.data.Dataset.from_tensor_slices((x_all, y_all)).batch(20)
trainer = RegressionTrainer(0.05)
for epoch in range(3):
    for xb, yb in data:
        last = trainer.step(xb, yb)
print("final loss", float(last))
