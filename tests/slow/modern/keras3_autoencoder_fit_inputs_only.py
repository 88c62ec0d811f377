"""An autoencoder (the shape of the Keras VAE examples) whose custom train_step
reads its inputs alone, fitted on NumPy data with no targets: fit(x) with an
array and no y, which the strategy splits by sample."""
import numpy as np
import tensorflow as tf
from tensorflow import keras

rng = np.random.RandomState(0)
basis = rng.rand(4, 16).astype("float32")
data = (rng.rand(2048, 4).astype("float32") @ basis) / 4.0


class AutoEncoder(keras.Model):
    def __init__(self, **kwargs):
        super().__init__(**kwargs)
        self.encoder = keras.layers.Dense(4)
        self.decoder = keras.layers.Dense(16)

    def call(self, inputs):
        return self.decoder(self.encoder(inputs))

    def train_step(self, data):
        with tf.GradientTape() as tape:
            reconstruction = self(data, training=True)
            loss = tf.reduce_mean(tf.square(data - reconstruction))
        grads = tape.gradient(loss, self.trainable_weights)
        self.optimizer.apply_gradients(zip(grads, self.trainable_weights))
        return {"loss": loss}


tf.keras.utils.set_random_seed(2)
autoencoder = AutoEncoder()
autoencoder.compile(optimizer=keras.optimizers.Adam(learning_rate=1e-2))
autoencoder.fit(data, epochs=8, batch_size=64, verbose=2)
