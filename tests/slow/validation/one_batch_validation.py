"""fit() on windows of a series with a validation set of ONE batch (60
windows, batch 64), both made by keras.utils.timeseries_dataset_from_array
(batched at the source). Sharded by whole batches on 2 ranks, that set
would be empty on every rank ("Expected input data to be non-empty")."""
import json

import numpy as np
import tensorflow as tf

tf.keras.utils.set_random_seed(0)
t = np.arange(900, dtype="float32")
series = np.stack([np.sin(t / 9), np.cos(t / 15)], axis=1).astype("float32")
WINDOW = 8
train_ds = tf.keras.utils.timeseries_dataset_from_array(
    series[:800 - WINDOW], series[WINDOW:800, 0], sequence_length=WINDOW, batch_size=64)
val_ds = tf.keras.utils.timeseries_dataset_from_array(
    series[800:868 - WINDOW + 1], series[800 + WINDOW:869, 0], sequence_length=WINDOW, batch_size=64)
model = tf.keras.Sequential([tf.keras.Input((WINDOW, 2)), tf.keras.layers.Flatten(), tf.keras.layers.Dense(1)])
model.compile(optimizer=tf.keras.optimizers.Adam(0.01), loss="mse")
history = model.fit(train_ds, validation_data=val_ds, epochs=8, verbose=0)
print("VAL_LOSS " + json.dumps([float(v) for v in history.history["val_loss"]]))
