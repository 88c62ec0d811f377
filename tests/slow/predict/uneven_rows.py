"""A decoder trained, then asked to predict a grid of 225 points (the
Generative-DL VAE notebooks' shape): on 2 TF_CONFIG workers the rows do not
divide evenly between them, and tf-keras's predict stopped both with a
collective shape mismatch."""
import json

import numpy as np
import tensorflow as tf
from tensorflow import keras
from tensorflow.keras import layers

inputs = keras.Input((2,))
x = layers.Dense(8 * 8 * 4)(inputs)
x = layers.Reshape((8, 8, 4))(x)
x = layers.Conv2DTranspose(32, 3, strides=2, padding="same")(x)
outputs = layers.Conv2D(1, 3, padding="same")(x)
decoder = keras.Model(inputs, outputs)
decoder.compile(optimizer="adam", loss="mse")
decoder.fit(np.random.RandomState(0).rand(64, 2), np.random.RandomState(1).rand(64, 16, 16, 1), epochs=2,
            batch_size=16)
grid = np.random.RandomState(2).rand(225, 2).astype("float32")
reconstructions = decoder.predict(grid)
print("PREDICTED " + json.dumps({"rows": len(reconstructions),
                                 "gap": float(np.abs(reconstructions - decoder(grid).numpy()).max())}))
