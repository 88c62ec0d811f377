# tfdist-test: ranks=2 disjoint=yes timeout=600
"""Keras 3 (import keras): a GAN whose train_step calls a discriminator
step and a generator step, methods of the model each with its own tape and
optimizer (the shape of the "Practical ML for Computer Vision" GAN
notebooks). The discriminator's loss is a sum of a Keras Loss object's
values (Keras 3 divides each by the number of replicas: the gradient is
kept, the value the method returns multiplied back); the generator's is a
tf.reduce_mean (divided once by the conversion). Both methods run only as
part of train_step, so fit() runs them on every replica; the optimizers they
apply are built in strategy.scope() before fit(), and the workers end with
identical variables."""
import keras
import numpy as np
import tensorflow as tf

N, BATCH, LATENT = 1024, 32, 8


def label_of(sample):
    return np.int64(0)


keras.utils.set_random_seed(13)
real = np.random.RandomState(3).normal(loc=1.5, scale=0.5, size=(N, 4)).astype(np.float32)


class GAN(keras.Model):
    def __init__(self, generator, discriminator):
        super().__init__()
        self.generator = generator
        self.discriminator = discriminator
        self.d_tracker = keras.metrics.Mean(name="d_loss")
        self.g_tracker = keras.metrics.Mean(name="g_loss")

    def call(self, samples):
        return self.discriminator(samples)

    def compile(self, d_optimizer, g_optimizer):
        super().compile()
        self.d_optimizer = d_optimizer
        self.g_optimizer = g_optimizer
        self.loss_fn = keras.losses.BinaryCrossentropy(from_logits=True)

    @property
    def metrics(self):
        return [self.d_tracker, self.g_tracker]

    def discriminator_step(self, batch, noise):
        with tf.GradientTape() as tape:
            real_logits = self.discriminator(batch, training=True)
            fake_logits = self.discriminator(self.generator(noise, training=True), training=True)
            d_loss = (self.loss_fn(tf.ones_like(real_logits), real_logits)
                      + self.loss_fn(tf.zeros_like(fake_logits), fake_logits))
        grads = tape.gradient(d_loss, self.discriminator.trainable_weights)
        self.d_optimizer.apply_gradients(zip(grads, self.discriminator.trainable_weights))
        return d_loss

    def generator_step(self, noise):
        with tf.GradientTape() as tape:
            fooled = self.discriminator(self.generator(noise, training=True), training=True)
            g_loss = tf.reduce_mean(tf.nn.softplus(-fooled))
        grads = tape.gradient(g_loss, self.generator.trainable_weights)
        self.g_optimizer.apply_gradients(zip(grads, self.generator.trainable_weights))
        return g_loss

    def train_step(self, batch):
        noise = tf.random.normal((tf.shape(batch)[0], LATENT))
        d_loss = self.discriminator_step(batch, noise)
        g_loss = self.generator_step(noise)
        self.d_tracker.update_state(d_loss)
        self.g_tracker.update_state(g_loss)
        return {"loss": self.d_tracker.result() + self.g_tracker.result(),
                "d_loss": self.d_tracker.result(), "g_loss": self.g_tracker.result()}


dataset = tf.data.Dataset.from_tensor_slices(real).shuffle(N, seed=4).batch(BATCH)
generator = keras.Sequential([keras.Input(shape=(LATENT,)), keras.layers.Dense(16, activation="relu"),
                              keras.layers.Dense(4)])
discriminator = keras.Sequential([keras.Input(shape=(4,)), keras.layers.Dense(16, activation="relu"),
                                  keras.layers.Dense(1)])
gan = GAN(generator, discriminator)
gan.compile(d_optimizer=keras.optimizers.SGD(learning_rate=0.02),
            g_optimizer=keras.optimizers.SGD(learning_rate=0.02))
history = gan.fit(dataset, epochs=3, verbose=2)
print("d_loss", history.history["d_loss"][-1], "g_loss", history.history["g_loss"][-1])
