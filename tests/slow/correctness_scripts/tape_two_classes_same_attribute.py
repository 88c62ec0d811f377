# tfdist-test: disjoint=yes coverage=0.9
"""Two classes with the same attribute names: a generator and a critic, each
holding its model and optimizer in self.model / self.opt."""
import numpy as np
import tensorflow as tf


def label_of(sample):
    return np.int64(int(sample[1] * 1000) % 3)


def make_generator():
    return tf.keras.Sequential([tf.keras.layers.Dense(8, activation="relu", input_shape=(6,)),
                                tf.keras.layers.Dense(4)])


def make_critic():
    return tf.keras.Sequential([tf.keras.layers.Dense(8, activation="relu", input_shape=(4,)),
                                tf.keras.layers.Dense(1)])


class Generator:
    def __init__(self, model, lr):
        self.model, self.opt = model, tf.keras.optimizers.Adam(lr)

    def step(self, noise, critic):
        with tf.GradientTape() as tape:
            fake = self.model(noise, training=True)
            loss = -tf.reduce_mean(critic.model(fake, training=True))
        grads = tape.gradient(loss, self.model.trainable_variables)
        self.opt.apply_gradients(zip(grads, self.model.trainable_variables))
        return loss


class Critic:
    def __init__(self, model):
        self.model, self.opt = model, tf.keras.optimizers.SGD(0.05)

    def step(self, real, fake):
        with tf.GradientTape() as tape:
            loss = tf.reduce_mean(self.model(fake, training=True)) - tf.reduce_mean(self.model(real, training=True))
        grads = tape.gradient(loss, self.model.trainable_variables)
        self.opt.apply_gradients(zip(grads, self.model.trainable_variables))
        return loss


tf.keras.utils.set_random_seed(13)
real_data = np.random.RandomState(1).rand(288, 4).astype("float32")
kinds = np.array([label_of(r) for r in real_data], dtype=np.int64)
dataset = tf.data.Dataset.from_tensor_slices((real_data, kinds)).shuffle(288, seed=2).batch(24)
gen = Generator(make_generator(), 1e-3)
critic = Critic(make_critic())
for epoch in range(2):
    for real, _kind in dataset:
        noise = tf.random.normal([real.shape[0], 6])
        c_loss = critic.step(real, gen.model(noise))
        g_loss = gen.step(noise, critic)
    print("epoch", epoch, float(c_loss), float(g_loss))
