"""The model factory of helper_built/trainer.py: another module of the project."""
import tensorflow as tf


def build_regressor(features):
    inputs = tf.keras.Input(shape=(features,))
    hidden = tf.keras.layers.Dense(16, activation="relu")(inputs)
    outputs = tf.keras.layers.Dense(1)(hidden)
    return [0.5, 1.0], tf.keras.Model(inputs, outputs)
