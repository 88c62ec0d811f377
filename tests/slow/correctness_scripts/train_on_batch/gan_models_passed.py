"""A GAN whose models are built and compiled under ``if __name__ ==
"__main__":`` and passed to a training function by keyword (the Keras GAN
recipe of several books): the discriminator's ``trainable = False`` before
the combined model is compiled freezes it in the combined model only under
tf-keras (Keras 2), its own train_on_batch still trains it; under Keras 3 it
stops training altogether."""
import numpy as np
import tensorflow as tf

data = np.random.RandomState(0).randn(1024, 4).astype("float32")


def train(generator, discriminator, combined, steps, batch_size):
    for step in range(steps):
        real = data[np.random.randint(0, len(data), batch_size)]
        fake = generator.predict(np.random.normal(0, 1, (batch_size, 2)), verbose=0)
        discriminator.train_on_batch(real, np.ones((batch_size, 1)))
        discriminator.train_on_batch(fake, np.zeros((batch_size, 1)))
        combined.train_on_batch(np.random.normal(0, 1, (batch_size, 2)), np.ones((batch_size, 1)))


if __name__ == "__main__":
    generator = tf.keras.Sequential([tf.keras.layers.Dense(4, input_shape=(2,))])
    discriminator = tf.keras.Sequential([tf.keras.layers.Dense(1, activation="sigmoid", input_shape=(4,))])
    discriminator.compile(loss="binary_crossentropy", optimizer=tf.keras.optimizers.Adam(2e-4))
    discriminator.trainable = False
    z = tf.keras.Input(shape=(2,))
    combined = tf.keras.Model(z, discriminator(generator(z)))
    combined.compile(loss="binary_crossentropy", optimizer=tf.keras.optimizers.Adam(2e-4))
    train(generator=generator, discriminator=discriminator, combined=combined, steps=50, batch_size=32)
