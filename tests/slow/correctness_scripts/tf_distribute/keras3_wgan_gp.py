# tfdist-test: ranks=2 disjoint=yes timeout=600
"""Keras 3 (import keras): a WGAN-GP whose train_step trains the critic with
a gradient penalty computed in a method it calls (the keras.io recipe's
shape): a second tape watches the interpolated samples and differentiates
the critic with respect to them. That gradient is part of the critic's loss
(no optimizer applies it); the critic's and the generator's losses are the
step's own means, each divided by the number of replicas once. The workers
end with identical variables."""
import keras
import numpy as np
import tensorflow as tf

N, BATCH, LATENT = 1024, 32, 8


def label_of(sample):
    return np.int64(0)


keras.utils.set_random_seed(17)
real = np.random.RandomState(5).normal(loc=1.5, scale=0.5, size=(N, 4)).astype(np.float32)


class WGAN(keras.Model):
    def __init__(self, critic, generator, gp_weight=10.0):
        super().__init__()
        self.critic = critic
        self.generator = generator
        self.gp_weight = gp_weight
        self.c_tracker = keras.metrics.Mean(name="c_loss")
        self.g_tracker = keras.metrics.Mean(name="g_loss")

    def call(self, samples):
        return self.critic(samples)

    def compile(self, c_optimizer, g_optimizer):
        super().compile()
        self.c_optimizer = c_optimizer
        self.g_optimizer = g_optimizer

    @property
    def metrics(self):
        return [self.c_tracker, self.g_tracker]

    def gradient_penalty(self, real_samples, fake_samples):
        alpha = tf.random.uniform((tf.shape(real_samples)[0], 1))
        interpolated = real_samples + alpha * (fake_samples - real_samples)
        with tf.GradientTape() as gp_tape:
            gp_tape.watch(interpolated)
            pred = self.critic(interpolated, training=True)
        grads = gp_tape.gradient(pred, [interpolated])[0]
        norm = tf.sqrt(tf.reduce_sum(tf.square(grads), axis=1) + 1e-12)
        return tf.reduce_mean((norm - 1.0) ** 2)

    def train_step(self, batch):
        noise = tf.random.normal((tf.shape(batch)[0], LATENT))
        with tf.GradientTape() as tape:
            fake = self.generator(noise, training=True)
            c_loss = tf.reduce_mean(self.critic(fake, training=True)) - tf.reduce_mean(
                self.critic(batch, training=True))
            c_loss = c_loss + self.gradient_penalty(batch, fake) * self.gp_weight
        c_grads = tape.gradient(c_loss, self.critic.trainable_weights)
        self.c_optimizer.apply_gradients(zip(c_grads, self.critic.trainable_weights))

        with tf.GradientTape() as tape:
            g_loss = -tf.reduce_mean(self.critic(self.generator(noise, training=True), training=True))
        g_grads = tape.gradient(g_loss, self.generator.trainable_weights)
        self.g_optimizer.apply_gradients(zip(g_grads, self.generator.trainable_weights))
        self.c_tracker.update_state(c_loss)
        self.g_tracker.update_state(g_loss)
        return {"c_loss": self.c_tracker.result(), "g_loss": self.g_tracker.result()}


dataset = tf.data.Dataset.from_tensor_slices(real).shuffle(N, seed=4).batch(BATCH)
critic = keras.Sequential([keras.Input(shape=(4,)), keras.layers.Dense(16, activation="relu"), keras.layers.Dense(1)])
generator = keras.Sequential([keras.Input(shape=(LATENT,)), keras.layers.Dense(16, activation="relu"),
                              keras.layers.Dense(4)])
wgan = WGAN(critic, generator)
wgan.compile(c_optimizer=keras.optimizers.SGD(learning_rate=0.005),
             g_optimizer=keras.optimizers.SGD(learning_rate=0.005))
history = wgan.fit(dataset, epochs=3, verbose=2)
print("c_loss", history.history["c_loss"][-1], "g_loss", history.history["g_loss"][-1])
