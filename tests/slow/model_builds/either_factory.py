"""A model either of two factories builds, chosen by a setting (the shape of Keras's ResNet
v1 / v2 example): both factories' layers must be made in the scope, whichever runs."""
import numpy as np
import tensorflow as tf
from tensorflow.keras.layers import Dense, Input
from tensorflow.keras.models import Model

version = 1


def net_v1(width):
    inputs = Input(shape=(8,))
    x = Dense(width, activation="relu")(inputs)
    outputs = Dense(2)(x)
    model = Model(inputs=inputs, outputs=outputs)
    return model


def net_v2(width):
    inputs = Input(shape=(8,))
    x = Dense(width)(inputs)
    outputs = Dense(2)(x)
    return Model(inputs=inputs, outputs=outputs)


if version == 2:
    model = net_v2(16)
else:
    model = net_v1(16)
model.compile(optimizer="adam", loss="mse")
model.fit(np.random.RandomState(0).rand(256, 8), np.random.RandomState(1).rand(256, 2), batch_size=16, epochs=3)
