"""Functional-API regression shape (the "Basic regression" and "Functional
API" guides): Input -> Dense stack, Adam with a learning rate, mean
absolute error, validation_split and an EarlyStopping callback that
restores the best weights. Synthetic tabular data stands in for the
fuel-efficiency table."""
import numpy as np
import tensorflow as tf
from tensorflow import keras
from tensorflow.keras import layers

rng = np.random.default_rng(1)
features = rng.normal(size=(1200, 9)).astype("float32")
weights = rng.normal(size=(9, 1)).astype("float32")
target = (features @ weights + 0.1 * rng.normal(size=(1200, 1))).astype("float32")

inputs = keras.Input(shape=(9,), name="features")
x = layers.Dense(32, activation="relu")(inputs)
x = layers.Dense(32, activation="relu")(x)
outputs = layers.Dense(1)(x)
model = keras.Model(inputs=inputs, outputs=outputs, name="regressor")

model.compile(optimizer=keras.optimizers.Adam(learning_rate=0.001), loss="mean_absolute_error")
early_stop = keras.callbacks.EarlyStopping(monitor="val_loss", patience=10, restore_best_weights=True)
history = model.fit(features, target, validation_split=0.2, batch_size=32, epochs=10,
                    callbacks=[early_stop], verbose=2)
print("final val_loss", history.history["val_loss"][-1])
