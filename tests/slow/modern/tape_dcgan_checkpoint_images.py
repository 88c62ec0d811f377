"""The DCGAN tutorial's shape: make_generator_model / make_discriminator_model
functions, BinaryCrossentropy(from_logits=True) helpers for both losses,
two Adam optimizers, a tf.train.Checkpoint of all four, a @tf.function
train_step with two tapes that returns nothing, train(dataset, epochs)
saving a figure of generated samples and a checkpoint every epoch.
Small 8x8 'images' stand in for MNIST."""
import os

import matplotlib
matplotlib.use("Agg")
import matplotlib.pyplot as plt
import numpy as np
import tensorflow as tf
from tensorflow.keras import layers

BUFFER_SIZE = 512
BATCH_SIZE = 32
noise_dim = 8
rng = np.random.default_rng(23)
train_images = (rng.random((BUFFER_SIZE, 8, 8, 1)) * 2 - 1).astype("float32")
train_dataset = tf.data.Dataset.from_tensor_slices(train_images).shuffle(BUFFER_SIZE, seed=4).batch(BATCH_SIZE)


def make_generator_model():
    model = tf.keras.Sequential()
    model.add(layers.Input(shape=(noise_dim,)))
    model.add(layers.Dense(4 * 4 * 8, use_bias=False))
    model.add(layers.BatchNormalization())
    model.add(layers.LeakyReLU())
    model.add(layers.Reshape((4, 4, 8)))
    model.add(layers.Conv2DTranspose(1, (3, 3), strides=(2, 2), padding="same", use_bias=False, activation="tanh"))
    return model


def make_discriminator_model():
    model = tf.keras.Sequential()
    model.add(layers.Input(shape=(8, 8, 1)))
    model.add(layers.Conv2D(8, (3, 3), strides=(2, 2), padding="same"))
    model.add(layers.LeakyReLU())
    model.add(layers.Flatten())
    model.add(layers.Dense(1))
    return model


generator = make_generator_model()
discriminator = make_discriminator_model()
cross_entropy = tf.keras.losses.BinaryCrossentropy(from_logits=True)


def discriminator_loss(real_output, fake_output):
    real_loss = cross_entropy(tf.ones_like(real_output), real_output)
    fake_loss = cross_entropy(tf.zeros_like(fake_output), fake_output)
    return real_loss + fake_loss


def generator_loss(fake_output):
    return cross_entropy(tf.ones_like(fake_output), fake_output)


generator_optimizer = tf.keras.optimizers.Adam(1e-3)
discriminator_optimizer = tf.keras.optimizers.Adam(1e-3)

checkpoint_dir = "./training_checkpoints"
checkpoint_prefix = os.path.join(checkpoint_dir, "ckpt")
checkpoint = tf.train.Checkpoint(generator_optimizer=generator_optimizer,
                                 discriminator_optimizer=discriminator_optimizer,
                                 generator=generator, discriminator=discriminator)

EPOCHS = 3
num_examples_to_generate = 4
seed = tf.random.normal([num_examples_to_generate, noise_dim], seed=5)


@tf.function
def train_step(images):
    noise = tf.random.normal([BATCH_SIZE, noise_dim])
    with tf.GradientTape() as gen_tape, tf.GradientTape() as disc_tape:
        generated_images = generator(noise, training=True)
        real_output = discriminator(images, training=True)
        fake_output = discriminator(generated_images, training=True)
        gen_loss = generator_loss(fake_output)
        disc_loss = discriminator_loss(real_output, fake_output)
    gradients_of_generator = gen_tape.gradient(gen_loss, generator.trainable_variables)
    gradients_of_discriminator = disc_tape.gradient(disc_loss, discriminator.trainable_variables)
    generator_optimizer.apply_gradients(zip(gradients_of_generator, generator.trainable_variables))
    discriminator_optimizer.apply_gradients(zip(gradients_of_discriminator, discriminator.trainable_variables))


def generate_and_save_images(model, epoch, test_input):
    predictions = model(test_input, training=False)
    fig = plt.figure(figsize=(2, 2))
    for i in range(predictions.shape[0]):
        plt.subplot(2, 2, i + 1)
        plt.imshow(predictions[i, :, :, 0] * 127.5 + 127.5, cmap="gray")
        plt.axis("off")
    plt.savefig("image_at_epoch_{:04d}.png".format(epoch))
    plt.close(fig)


def train(dataset, epochs):
    for epoch in range(epochs):
        for image_batch in dataset:
            train_step(image_batch)
        generate_and_save_images(generator, epoch + 1, seed)
        checkpoint.save(file_prefix=checkpoint_prefix)


train(train_dataset, EPOCHS)
