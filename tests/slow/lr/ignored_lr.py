"""A Keras 2 script giving its optimizer lr=, which Keras ignores since TF 2.11 (it trains at the default)."""
import numpy as np
import tensorflow as tf
from tensorflow.keras import optimizers
tf.keras.utils.set_random_seed(0)
rng = np.random.default_rng(0)
x = rng.normal(size=(512, 4)).astype("float32"); y = x.sum(1, keepdims=True)
model = tf.keras.Sequential([tf.keras.Input((4,)), tf.keras.layers.Dense(8, activation="relu"), tf.keras.layers.Dense(1)])
model.compile(optimizer=optimizers.Adam(lr=0.05), loss="mse")
model.fit(x, y, batch_size=32, epochs=3)
