"""A GAN trained by a tape loop that reads batches with next() from a
dataset another module builds and batches (the shape of a held-out
repository's GAN trainers): tf-distribute refused it before."""
import numpy as np
import tensorflow as tf
from tensorflow import keras

from data_helpers import make_dataset

tf.random.set_seed(5)
rng = np.random.default_rng(0)
images = (rng.normal(size=(1024, 8)) * 0.5 + 2.0).astype("float32")
dataset, shape, n = make_dataset(images, 32)
db_iter = iter(dataset.repeat())
generator = keras.Sequential([keras.Input((4,)), keras.layers.Dense(16, activation="relu"), keras.layers.Dense(8)])
discriminator = keras.Sequential([keras.Input((8,)), keras.layers.Dense(16, activation="relu"), keras.layers.Dense(1)])
g_optimizer = keras.optimizers.Adam(1e-3)
d_optimizer = keras.optimizers.Adam(1e-3)
bce = keras.losses.BinaryCrossentropy(from_logits=True)
for step in range(120):
    batch_x = next(db_iter)
    batch_z = tf.random.normal([32, 4])
    with tf.GradientTape() as tape:
        fake = generator(batch_z, training=True)
        d_loss = bce(tf.ones([32, 1]), discriminator(batch_x)) + bce(tf.zeros([32, 1]), discriminator(fake))
    grads = tape.gradient(d_loss, discriminator.trainable_variables)
    d_optimizer.apply_gradients(zip(grads, discriminator.trainable_variables))
    with tf.GradientTape() as tape:
        g_loss = bce(tf.ones([32, 1]), discriminator(generator(batch_z, training=True)))
    grads = tape.gradient(g_loss, generator.trainable_variables)
    g_optimizer.apply_gradients(zip(grads, generator.trainable_variables))
    if step % 40 == 0:
        print(step, float(d_loss), float(g_loss))
