# tfdist-test: ranks=2 disjoint=yes timeout=600
"""tf.keras: the shape of Keras's DCGAN example -- a GAN Model subclass whose
overridden compile() takes two optimizers and a loss object
(loss_fn=tf.keras.losses.BinaryCrossentropy(from_logits=True): a mean
reduction), and whose train_step calls it for both losses. On TF_CONFIG
workers fit() runs on tf-keras (keras-team/keras#20585), whose Loss raises
ValueError on a mean reduction under a strategy outside compile():
converted, the object is built with reduction="none" and each call
averaged and divided by the number of replicas, as Keras 3's mean
reduction is on one host. Before, the file converted with a warning and
every worker stopped with that error."""
import numpy as np
import tensorflow as tf

N, BATCH, LATENT = 1024, 32, 8


def label_of(sample):
    return np.int64(0)


tf.keras.utils.set_random_seed(11)
real = np.random.RandomState(2).normal(loc=1.5, scale=0.5, size=(N, 4)).astype(np.float32)


def build_generator():
    return tf.keras.Sequential([tf.keras.Input(shape=(LATENT,)), tf.keras.layers.Dense(16, activation="relu"),
                                tf.keras.layers.Dense(4)])


def build_discriminator():
    return tf.keras.Sequential([tf.keras.Input(shape=(4,)), tf.keras.layers.Dense(16, activation="relu"),
                                tf.keras.layers.Dense(1)])


class GAN(tf.keras.Model):
    def __init__(self, generator, discriminator):
        super().__init__()
        self.generator = generator
        self.discriminator = discriminator
        self.d_tracker = tf.keras.metrics.Mean(name="d_loss")
        self.g_tracker = tf.keras.metrics.Mean(name="g_loss")

    def call(self, samples):
        return self.discriminator(samples)

    def compile(self, d_optimizer, g_optimizer, loss_fn):
        super().compile()
        self.d_optimizer = d_optimizer
        self.g_optimizer = g_optimizer
        self.loss_fn = loss_fn

    @property
    def metrics(self):
        return [self.d_tracker, self.g_tracker]

    def train_step(self, batch):
        size = tf.shape(batch)[0]
        noise = tf.random.normal((size, LATENT))
        fake = self.generator(noise)
        combined = tf.concat([fake, batch], axis=0)
        labels = tf.concat([tf.ones((size, 1)), tf.zeros((size, 1))], axis=0)
        with tf.GradientTape() as tape:
            d_loss = self.loss_fn(labels, self.discriminator(combined, training=True))
        grads = tape.gradient(d_loss, self.discriminator.trainable_weights)
        self.d_optimizer.apply_gradients(zip(grads, self.discriminator.trainable_weights))

        misleading = tf.zeros((size, 1))
        with tf.GradientTape() as tape:
            g_loss = self.loss_fn(misleading, self.discriminator(self.generator(noise, training=True)))
        grads = tape.gradient(g_loss, self.generator.trainable_weights)
        self.g_optimizer.apply_gradients(zip(grads, self.generator.trainable_weights))

        self.d_tracker.update_state(d_loss)
        self.g_tracker.update_state(g_loss)
        return {"d_loss": self.d_tracker.result(), "g_loss": self.g_tracker.result()}


dataset = tf.data.Dataset.from_tensor_slices(real).shuffle(N, seed=4).batch(BATCH)
gan = GAN(build_generator(), build_discriminator())
gan.compile(d_optimizer=tf.keras.optimizers.SGD(learning_rate=0.02),
            g_optimizer=tf.keras.optimizers.SGD(learning_rate=0.02),
            loss_fn=tf.keras.losses.BinaryCrossentropy(from_logits=True))
history = gan.fit(dataset, epochs=3, verbose=2)
print("d_loss", history.history["d_loss"][-1], "g_loss", history.history["g_loss"][-1])
