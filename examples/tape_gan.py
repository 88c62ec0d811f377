"""A tiny GAN on 2-D synthetic points.

Real data: a Gaussian blob centred at TARGET_MEAN. The generator maps 8-D
noise to 2-D points; the discriminator is a small MLP. Both are trained in a
single tf.function with two gradient tapes and two Adam optimizers.

Adversarial losses hover around log(2) and are not a good progress signal, so
the `loss` we report is the distance between the mean of a fixed batch of
generated points and TARGET_MEAN (the generator starts near the origin, so it
begins around |TARGET_MEAN| and shrinks as the generator learns). The raw
discriminator / generator losses are printed alongside as `disc` / `gen`.
"""
import os

import numpy as np
import tensorflow as tf
from tensorflow.keras import layers
from tensorflow.keras.optimizers import Adam

NOISE_DIM = 8
NUM_REAL = 1003
BATCH_SIZE = 32
EPOCHS = int(os.environ.get("TFDIST_BENCH_EPOCHS", "6"))
TARGET_MEAN = np.array([2.0, -1.5], dtype=np.float32)
TARGET_STD = 0.3


def make_generator():
    return tf.keras.Sequential([
        layers.Dense(32, activation="relu", input_shape=(NOISE_DIM,)),
        layers.Dense(32, activation="relu"),
        layers.Dense(2),
    ], name="generator")


def make_discriminator():
    return tf.keras.Sequential([
        layers.Dense(32, activation="relu", input_shape=(2,)),
        layers.Dense(32, activation="relu"),
        layers.Dense(1),
    ], name="discriminator")


def main():
    tf.keras.utils.set_random_seed(3)
    rng = np.random.default_rng(3)
    real_points = (TARGET_MEAN + TARGET_STD * rng.normal(size=(NUM_REAL, 2))).astype(np.float32)
    dataset = tf.data.Dataset.from_tensor_slices(real_points).shuffle(NUM_REAL, seed=3).batch(BATCH_SIZE)

    # Fixed noise used only for monitoring progress.
    eval_noise = tf.constant(rng.normal(size=(256, NOISE_DIM)).astype(np.float32))

    generator = make_generator()
    discriminator = make_discriminator()
    gen_optimizer = Adam(2e-3, beta_1=0.5)
    disc_optimizer = Adam(2e-3, beta_1=0.5)
    bce = tf.keras.losses.BinaryCrossentropy(from_logits=True)

    @tf.function
    def train_step(real):
        noise = tf.random.normal([tf.shape(real)[0], NOISE_DIM])
        with tf.GradientTape() as gen_tape, tf.GradientTape() as disc_tape:
            fake = generator(noise, training=True)
            real_logits = discriminator(real, training=True)
            fake_logits = discriminator(fake, training=True)
            gen_loss = bce(tf.ones_like(fake_logits), fake_logits)
            disc_loss = (bce(tf.ones_like(real_logits), real_logits)
                         + bce(tf.zeros_like(fake_logits), fake_logits))
        gen_grads = gen_tape.gradient(gen_loss, generator.trainable_variables)
        disc_grads = disc_tape.gradient(disc_loss, discriminator.trainable_variables)
        gen_optimizer.apply_gradients(zip(gen_grads, generator.trainable_variables))
        disc_optimizer.apply_gradients(zip(disc_grads, discriminator.trainable_variables))
        return gen_loss, disc_loss

    def distance_to_target():
        samples = generator(eval_noise, training=False)
        return float(tf.norm(tf.reduce_mean(samples, axis=0) - TARGET_MEAN))

    print(f"step 0 loss {distance_to_target():.4f} (generated mean vs target)")
    step = 0
    for epoch in range(EPOCHS):
        for real in dataset:
            gen_loss, disc_loss = train_step(real)
            step += 1
            if step % 25 == 0:
                print(f"step {step} loss {distance_to_target():.4f} "
                      f"disc {disc_loss.numpy():.4f} gen {gen_loss.numpy():.4f}")

    final = distance_to_target()
    samples = generator(eval_noise, training=False).numpy()
    print(f"generated mean {samples.mean(axis=0)}, std {samples.std(axis=0)}")
    print(f"final loss {final:.4f}")

    os.makedirs("./gan_models", exist_ok=True)
    generator.save_weights("./gan_models/generator.weights.h5")
    discriminator.save_weights("./gan_models/discriminator.weights.h5")


if __name__ == "__main__":
    main()
