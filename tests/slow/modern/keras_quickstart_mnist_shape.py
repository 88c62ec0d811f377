"""Beginner quickstart shape (tensorflow.org "TensorFlow 2 quickstart for
beginners"): Sequential with Flatten/Dense/Dropout, logits and
SparseCategoricalCrossentropy(from_logits=True), fit then evaluate.
MNIST stands in as small synthetic 28x28 images whose label is the
brightest quadrant (no download)."""
import numpy as np
import tensorflow as tf

rng = np.random.default_rng(0)


def make(n):
    x = rng.random((n, 28, 28)).astype("float32")
    quadrants = np.stack([x[:, :14, :14].sum((1, 2)), x[:, :14, 14:].sum((1, 2)),
                          x[:, 14:, :14].sum((1, 2)), x[:, 14:, 14:].sum((1, 2))], axis=1)
    return x, quadrants.argmax(axis=1).astype("int64")


x_train, y_train = make(1024)
x_test, y_test = make(256)

tf.random.set_seed(0)
model = tf.keras.models.Sequential([
    tf.keras.layers.Input(shape=(28, 28)),
    tf.keras.layers.Flatten(),
    tf.keras.layers.Dense(64, activation="relu"),
    tf.keras.layers.Dropout(0.1),
    tf.keras.layers.Dense(4),
])
loss_fn = tf.keras.losses.SparseCategoricalCrossentropy(from_logits=True)
model.compile(optimizer="adam", loss=loss_fn, metrics=["accuracy"])
model.fit(x_train, y_train, batch_size=32, epochs=4)
model.evaluate(x_test, y_test, verbose=2)
