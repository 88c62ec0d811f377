"""A convolutional autoencoder trained with a custom loop (the "Intro to
Autoencoders" / "Convolutional VAE" tutorials' loop): an encoder and a
decoder model, a step that returns the loss, the epoch's mean loss kept in
a tf.keras.metrics.Mean updated outside the step, printed per epoch."""
import numpy as np
import tensorflow as tf
from tensorflow.keras import layers

rng = np.random.default_rng(24)
images = rng.random((512, 12, 12, 1)).astype("float32")
train_dataset = tf.data.Dataset.from_tensor_slices(images).shuffle(512, seed=6).batch(32)

encoder = tf.keras.Sequential([
    layers.Input(shape=(12, 12, 1)),
    layers.Conv2D(8, 3, activation="relu", padding="same", strides=2),
    layers.Conv2D(4, 3, activation="relu", padding="same", strides=2),
])
decoder = tf.keras.Sequential([
    layers.Input(shape=(3, 3, 4)),
    layers.Conv2DTranspose(4, 3, strides=2, activation="relu", padding="same"),
    layers.Conv2DTranspose(8, 3, strides=2, activation="relu", padding="same"),
    layers.Conv2D(1, 3, activation="sigmoid", padding="same"),
])
optimizer = tf.keras.optimizers.Adam(1e-3)
mse = tf.keras.losses.MeanSquaredError()


@tf.function
def train_step(x):
    with tf.GradientTape() as tape:
        reconstruction = decoder(encoder(x, training=True), training=True)
        loss = mse(x, reconstruction)
    variables = encoder.trainable_variables + decoder.trainable_variables
    gradients = tape.gradient(loss, variables)
    optimizer.apply_gradients(zip(gradients, variables))
    return loss


epochs = 3
for epoch in range(1, epochs + 1):
    epoch_loss = tf.keras.metrics.Mean()
    for step, train_x in enumerate(train_dataset):
        loss = train_step(train_x)
        epoch_loss(loss)
    print(f"Epoch: {epoch}, mean loss: {epoch_loss.result():.5f}")
