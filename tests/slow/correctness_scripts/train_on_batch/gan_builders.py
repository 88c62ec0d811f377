"""The model builders of gan_models_from_module.py: a module of the user's
that tfdist is not given (the GAN recipe of several books keeps them in a
gan_utils.py next to the notebook)."""
import tensorflow as tf


def build_generator(z_dim=2):
    return tf.keras.Sequential([tf.keras.Input(shape=(z_dim,)), tf.keras.layers.Dense(8, activation="relu"),
                                tf.keras.layers.Dense(4)])


def build_discriminator():
    return tf.keras.Sequential([tf.keras.Input(shape=(4,)), tf.keras.layers.Dense(8, activation="relu"),
                                tf.keras.layers.Dense(1, activation="sigmoid")])
