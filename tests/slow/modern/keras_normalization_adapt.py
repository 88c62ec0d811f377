"""Preprocessing inside the model (the "Basic regression" tutorial's DNN):
a Normalization layer adapted to the training features before the model
is built, then a Sequential model that starts with it, trained with
validation_split and verbose=0, the history kept in a dict."""
import numpy as np
import tensorflow as tf
from tensorflow import keras
from tensorflow.keras import layers

rng = np.random.default_rng(8)
train_features = (rng.normal(size=(900, 7)) * [1, 10, 100, 5, 0.5, 20, 3] + 50).astype("float32")
train_labels = (train_features[:, 0] * 0.3 - train_features[:, 2] * 0.01 + 4).astype("float32")

normalizer = layers.Normalization(axis=-1)
normalizer.adapt(np.array(train_features))


def build_and_compile_model(norm):
    model = keras.Sequential([
        norm,
        layers.Dense(32, activation="relu"),
        layers.Dense(32, activation="relu"),
        layers.Dense(1),
    ])
    model.compile(loss="mean_absolute_error", optimizer=tf.keras.optimizers.Adam(0.001))
    return model


dnn_model = build_and_compile_model(normalizer)
history = dnn_model.fit(train_features, train_labels, validation_split=0.2, verbose=0, epochs=16)
test_results = {"dnn_model": dnn_model.evaluate(train_features[:100], train_labels[:100], verbose=0)}
print(test_results)
