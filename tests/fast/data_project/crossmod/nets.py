"""Shared base model."""
from tensorflow import keras


class BaseNet(keras.Model):
    def __init__(self, units, **kwargs):
        super().__init__(**kwargs)
        self.hidden = keras.layers.Dense(units, activation="relu")
