"""A small GAN trained with train_on_batch (the Keras GAN recipe): a
discriminator compiled on its own, a combined model (generator + frozen
discriminator) compiled after ``discriminator.trainable = False``, a step
loop drawing random rows and noise from NumPy's (seeded) global generator,
losses printed and samples saved every K steps. The real data are 4-D
Gaussian points around a fixed centre: the generator has learnt when its
samples' mean is near that centre. Written to gan_result.npy: the distance
of the generated mean from the centre before and after training, and the
last losses."""
import numpy as np
import tensorflow as tf

LATENT = 4
BATCH = 64
STEPS = 60
EVERY = 20
CENTRE = np.array([2.0, -1.0, 0.5, 3.0], dtype="float32")

tf.keras.utils.set_random_seed(7)
data = (CENTRE + 0.3 * np.random.RandomState(0).randn(4096, 4)).astype("float32")

generator = tf.keras.Sequential([
    tf.keras.layers.Dense(16, activation="relu", input_shape=(LATENT,)),
    tf.keras.layers.Dense(4),
])
discriminator = tf.keras.Sequential([
    tf.keras.layers.Dense(16, activation="relu", input_shape=(4,)),
    tf.keras.layers.Dense(1, activation="sigmoid"),
])
discriminator.compile(optimizer=tf.keras.optimizers.Adam(5e-3, 0.5), loss="binary_crossentropy")

discriminator.trainable = False
z = tf.keras.Input(shape=(LATENT,))
combined = tf.keras.Model(z, discriminator(generator(z)))
combined.compile(optimizer=tf.keras.optimizers.Adam(5e-3, 0.5), loss="binary_crossentropy")

probe_noise = np.random.RandomState(1).normal(0, 1, (1000, LATENT)).astype("float32")
before = float(np.linalg.norm(generator.predict(probe_noise, verbose=0).mean(axis=0) - CENTRE))

valid = np.ones((BATCH, 1), dtype="float32")
fake = np.zeros((BATCH, 1), dtype="float32")
for step in range(STEPS):
    idx = np.random.randint(0, data.shape[0], BATCH)
    real = data[idx]
    noise = np.random.normal(0, 1, (BATCH, LATENT)).astype("float32")
    generated = generator.predict(noise, verbose=0)
    d_loss_real = discriminator.train_on_batch(real, valid)
    d_loss_fake = discriminator.train_on_batch(generated, fake)
    d_loss = 0.5 * (d_loss_real + d_loss_fake)
    noise = np.random.normal(0, 1, (BATCH, LATENT)).astype("float32")
    g_loss = combined.train_on_batch(noise, valid)
    if step % EVERY == 0:
        print(f"step {step}: D loss {d_loss:.4f}, G loss {g_loss:.4f}")
        samples = generator.predict(probe_noise[:16], verbose=0)
        np.save(f"gan_samples_{step:04d}.npy", samples)

after = float(np.linalg.norm(generator.predict(probe_noise, verbose=0).mean(axis=0) - CENTRE))
print(f"generated mean's distance from the centre: {before:.3f} -> {after:.3f}")
np.save("gan_result.npy", np.array([before, after, d_loss, g_loss]))
