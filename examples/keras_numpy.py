"""Multi-class classifier built with the Keras functional API, fed NumPy arrays.

Synthetic 3-class problem: 16-dimensional points whose class is the argmax
of a fixed random linear map. Trains with `model.fit` directly on arrays
(with a 10% validation split), evaluates on a held-out test set and saves the
model to ./saved_model.keras.
"""
import os
import random

import numpy as np
import tensorflow as tf
from tensorflow.keras import layers

NUM_TRAIN = 1003
NUM_TEST = 200
NUM_FEATURES = 16
NUM_CLASSES = 3
EPOCHS = int(os.environ.get("TFDIST_BENCH_EPOCHS", "4"))

random.seed(42)  # Keras initializers take their seeds from Python's RNG
np.random.seed(42)
tf.random.set_seed(42)

# Fixed labelling rule shared by train and test data.
W_RULE = np.random.randn(NUM_FEATURES, NUM_CLASSES).astype("float32")


def make_split(n):
    x = np.random.randn(n, NUM_FEATURES).astype("float32")
    y = np.argmax(x @ W_RULE, axis=1).astype("int64")
    return x, y


x_train, y_train = make_split(NUM_TRAIN)
x_test, y_test = make_split(NUM_TEST)

# Functional model
inputs = tf.keras.Input(shape=(NUM_FEATURES,), name="features")
h = layers.Dense(64, activation="relu")(inputs)
h = layers.Dropout(0.1)(h)
h = layers.Dense(32, activation="relu")(h)
outputs = layers.Dense(NUM_CLASSES, activation="softmax", name="probs")(h)
model = tf.keras.Model(inputs=inputs, outputs=outputs)

model.compile(optimizer="adam", loss="sparse_categorical_crossentropy", metrics=["accuracy"])

history = model.fit(x_train, y_train, batch_size=32, epochs=EPOCHS, validation_split=0.1, verbose=2)

test_loss, test_acc = model.evaluate(x_test, y_test, verbose=2)
print(f"test accuracy {test_acc:.4f}")
print(f"final loss {history.history['loss'][-1]:.4f}")

model.save("./saved_model.keras")
