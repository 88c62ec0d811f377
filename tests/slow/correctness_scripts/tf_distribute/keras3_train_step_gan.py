# tfdist-test: ranks=2 disjoint=yes timeout=600
"""Keras 3 (import keras): a GAN as a Model subclass holding a generator and
a discriminator (sub-models built apart and passed in), metric trackers made
in __init__, two optimizers given to an overridden compile(), and a
train_step with two tapes: the discriminator's loss a tf.reduce_mean applied
with apply_gradients(zip(...)), the generator's a keras.ops.mean applied
with optimizer.apply(grads, variables). Converted, both losses are divided
by the number of replicas once, every variable (both sub-models, both
optimizers, the trackers) is created in strategy.scope(), and the workers
end with identical variables. The noise is tf.random.normal: keras.random
without a SeedGenerator made in __init__ creates its seed variable inside
the step's tf.function, which fails under any strategy ("tf.function only
supports singleton tf.Variables", measured on Keras 3.15)."""
import keras
import numpy as np
import tensorflow as tf

N, BATCH, LATENT = 1024, 32, 8


def label_of(sample):
    return np.int64(0)


keras.utils.set_random_seed(11)
real = np.random.RandomState(2).normal(loc=1.5, scale=0.5, size=(N, 4)).astype(np.float32)


def build_generator():
    return keras.Sequential([keras.Input(shape=(LATENT,)), keras.layers.Dense(16, activation="relu"),
                             keras.layers.Dense(4)])


def build_discriminator():
    return keras.Sequential([keras.Input(shape=(4,)), keras.layers.Dense(16, activation="relu"),
                             keras.layers.Dense(1)])


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

    @property
    def metrics(self):
        return [self.d_tracker, self.g_tracker]

    def train_step(self, batch):
        size = tf.shape(batch)[0]
        noise = tf.random.normal((size, LATENT))
        with tf.GradientTape() as tape:
            fake = self.generator(noise, training=True)
            d_loss = (tf.reduce_mean(tf.nn.softplus(-self.discriminator(batch, training=True)))
                      + tf.reduce_mean(tf.nn.softplus(self.discriminator(fake, training=True))))
        d_grads = tape.gradient(d_loss, self.discriminator.trainable_weights)
        self.d_optimizer.apply_gradients(zip(d_grads, self.discriminator.trainable_weights))

        with tf.GradientTape() as tape:
            fooled = self.discriminator(self.generator(noise, training=True), training=True)
            g_loss = keras.ops.mean(keras.ops.softplus(-fooled))
        g_grads = tape.gradient(g_loss, self.generator.trainable_weights)
        self.g_optimizer.apply(g_grads, self.generator.trainable_weights)

        self.d_tracker.update_state(d_loss)
        self.g_tracker.update_state(g_loss)
        return {"loss": self.d_tracker.result() + self.g_tracker.result(),
                "d_loss": self.d_tracker.result(), "g_loss": self.g_tracker.result()}


dataset = tf.data.Dataset.from_tensor_slices(real).shuffle(N, seed=4).batch(BATCH)
generator = build_generator()
discriminator = build_discriminator()
gan = GAN(generator, discriminator)
gan.compile(d_optimizer=keras.optimizers.SGD(learning_rate=0.02),
            g_optimizer=keras.optimizers.SGD(learning_rate=0.02))
history = gan.fit(dataset, epochs=3, verbose=2)
print("d_loss", history.history["d_loss"][-1], "g_loss", history.history["g_loss"][-1])
