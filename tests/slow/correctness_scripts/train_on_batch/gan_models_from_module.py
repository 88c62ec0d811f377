"""A GAN whose generator and discriminator are built by functions of
another module of the user's (gan_builders.py, which tfdist does not read)
and handed to a training function as parameters; the combined model calls
the generator on its input. Every model whose variables the steps update
must be built in the strategy's scope: the builders' calls, wherever the
models they return are compiled or called as layers. The generator, known a
model only by being called on a Keras input, is saved by one process."""
import numpy as np
import tensorflow as tf

from gan_builders import build_discriminator, build_generator

data = np.random.RandomState(0).randn(1024, 4).astype("float32") * 0.5 + 2.0


def train(generator=None, discriminator=None, gan_model=None, steps=100, batch_size=32, z_dim=2):
    for step in range(steps):
        real = data[np.random.randint(0, len(data), batch_size)]
        fake = generator.predict(np.random.normal(0, 1, (batch_size, z_dim)), verbose=0)
        discriminator.train_on_batch(real, np.ones((batch_size, 1)))
        discriminator.train_on_batch(fake, np.zeros((batch_size, 1)))
        gan_model.train_on_batch(np.random.normal(0, 1, (batch_size, z_dim)), np.ones((batch_size, 1)))


discriminator = build_discriminator()
discriminator.compile(loss="binary_crossentropy", optimizer=tf.keras.optimizers.Adam(2e-3), metrics=["accuracy"])
generator = build_generator()

z = tf.keras.Input(shape=(2,))
img = generator(z)
discriminator.trainable = False
validity = discriminator(img)
gan_model = tf.keras.Model(z, validity)
gan_model.compile(loss="binary_crossentropy", optimizer=tf.keras.optimizers.Adam(2e-3))
train(generator, discriminator, gan_model, steps=100, batch_size=32)
generator.save_weights("gan_generator.weights.h5")
