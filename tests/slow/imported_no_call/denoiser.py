"""A Keras 3 trainer with a train_step and no call(), defined in a module of its own and made by
a factory there that also compiles it with a loss object its step calls (the shape of Keras's
diffusion examples)."""
import keras
import tensorflow as tf


class Denoiser(keras.Model):
    def __init__(self, width):
        super().__init__()
        self.network = keras.Sequential([keras.Input((8,)), keras.layers.Dense(width, activation="relu"),
                                         keras.layers.Dense(8)])
        self.tracker = keras.metrics.Mean(name="noise_loss")

    @property
    def metrics(self):
        return [self.tracker]

    def train_step(self, data):
        clean, noise = data
        with tf.GradientTape() as tape:
            predicted = self.network(clean + 0.3 * noise, training=True)
            loss = self.loss(noise, predicted)
        gradients = tape.gradient(loss, self.network.trainable_weights)
        self.optimizer.apply_gradients(zip(gradients, self.network.trainable_weights))
        self.tracker.update_state(loss)
        return {"noise_loss": self.tracker.result()}


def create_model(width, learning_rate):
    model = Denoiser(width)
    model.compile(optimizer=keras.optimizers.Adam(learning_rate), loss=keras.losses.MeanAbsoluteError())
    return model
