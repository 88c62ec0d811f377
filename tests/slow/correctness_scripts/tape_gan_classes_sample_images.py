# tfdist-test: disjoint=yes coverage=0.9 requires=matplotlib rank0_files=gan_epoch_*.png
"""A GAN written as a generator class and a critic class (self.model and
self.optimizer in each), saving sample images every epoch with matplotlib
(Agg) savefig.  The real data come as (image, class) pairs, as from a labelled
image set; the GAN ignores the class."""
import matplotlib
matplotlib.use("Agg")
import matplotlib.pyplot as plt
import numpy as np
import tensorflow as tf

NOISE_DIM = 8
BATCH = 32


def label_of(sample):
    return np.int64(int(sample[0] * 1000) % 4)


class Generator:
    def __init__(self):
        self.model = tf.keras.Sequential([tf.keras.layers.Dense(16, activation="relu", input_shape=(NOISE_DIM,)),
                                          tf.keras.layers.Dense(16, activation="sigmoid")])
        self.optimizer = tf.keras.optimizers.Adam(2e-4, beta_1=0.5)

    def train_step(self, noise, critic):
        with tf.GradientTape() as tape:
            fake = self.model(noise, training=True)
            loss = -tf.reduce_mean(critic.model(fake, training=True))
        grads = tape.gradient(loss, self.model.trainable_variables)
        self.optimizer.apply_gradients(zip(grads, self.model.trainable_variables))
        return loss


class Critic:
    def __init__(self):
        self.model = tf.keras.Sequential([tf.keras.layers.Dense(16, activation="relu", input_shape=(16,)),
                                          tf.keras.layers.Dense(1)])
        self.optimizer = tf.keras.optimizers.RMSprop(5e-4)

    def train_step(self, real, fake):
        with tf.GradientTape() as tape:
            loss = tf.reduce_mean(self.model(fake, training=True)) - tf.reduce_mean(self.model(real, training=True))
        grads = tape.gradient(loss, self.model.trainable_variables)
        self.optimizer.apply_gradients(zip(grads, self.model.trainable_variables))
        return loss


def save_samples(generator, noise, epoch):
    images = generator.model(noise, training=False).numpy().reshape(-1, 4, 4)
    fig = plt.figure(figsize=(2, 2))
    for i in range(images.shape[0]):
        plt.subplot(2, 2, i + 1)
        plt.imshow(images[i], cmap="gray")
        plt.axis("off")
    plt.savefig("gan_epoch_{:03d}.png".format(epoch))
    plt.close(fig)


tf.keras.utils.set_random_seed(12)
real_images = np.random.RandomState(0).rand(384, 16).astype("float32")
classes = np.array([label_of(img) for img in real_images], dtype=np.int64)
dataset = tf.data.Dataset.from_tensor_slices((real_images, classes)).shuffle(384, seed=4).batch(BATCH, drop_remainder=True)
generator = Generator()
critic = Critic()
fixed_noise = tf.random.normal([4, NOISE_DIM])
for epoch in range(2):
    for real, _ in dataset:
        noise = tf.random.normal([BATCH, NOISE_DIM])
        critic.train_step(real, generator.model(noise, training=False))
        generator.train_step(noise, critic)
    save_samples(generator, fixed_noise, epoch)
