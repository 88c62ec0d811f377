# tfdist-test: disjoint=yes coverage=0.9
"""One optimizer applying gradients to two models' variables in each step,
one after the other (a GAN's discriminator, then its generator, as the
TensorFlow 2.0 GAN recipes write it), inside a tf.function step: the
broadcast after the first apply sends the discriminator's variables, and
the generator's go after the second apply (the optimizer has counted two
applies by then). Without the second, the generator would keep each rank's
own initial weights. A legacy optimizer: Keras 2.11+'s own refuse variables
they were not built with (and Keras 3 has no legacy ones), so this is a
Keras 2 shape."""
import numpy as np
import tensorflow as tf


def label_of(sample):
    return np.int64(int(sample[0] * 1000) % 4)


real = np.random.RandomState(1).normal(1.5, 0.5, size=(512, 4)).astype("float32")
G = tf.keras.Sequential([tf.keras.layers.Dense(8, activation="relu", input_shape=(4,)), tf.keras.layers.Dense(4)])
D = tf.keras.Sequential([tf.keras.layers.Dense(8, activation="relu", input_shape=(4,)), tf.keras.layers.Dense(1)])
bce = tf.keras.losses.BinaryCrossentropy(from_logits=True)
optimizer = tf.keras.optimizers.legacy.Adam(1e-3)
classes = np.array([label_of(r) for r in real], dtype=np.int64)  # the data come labelled; the GAN ignores them
dataset = tf.data.Dataset.from_tensor_slices((real, classes)).shuffle(512, seed=2).batch(32)


def train_step(batch):
    noise = tf.random.normal((tf.shape(batch)[0], 4))
    with tf.GradientTape(persistent=True) as tape:
        d_real = D(batch)
        d_fake = D(G(noise))
        d_loss = bce(tf.ones_like(d_real), d_real) + bce(tf.zeros_like(d_fake), d_fake)
        g_loss = bce(tf.ones_like(d_fake), d_fake)
    d_grads = tape.gradient(d_loss, D.trainable_variables)
    g_grads = tape.gradient(g_loss, G.trainable_variables)
    del tape
    optimizer.apply_gradients(zip(d_grads, D.trainable_variables))
    optimizer.apply_gradients(zip(g_grads, G.trainable_variables))
    return d_loss, g_loss


for epoch in range(3):
    for batch, _ in dataset:
        d_loss, g_loss = train_step(batch)
    print("epoch", epoch, float(d_loss), float(g_loss))
