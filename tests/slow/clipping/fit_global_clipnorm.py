"""Keras fit with an optimizer that clips by global norm (Keras's own
global_clipnorm): Keras 3 clips each replica's gradients before its
optimizer sums them, so the conversion makes it clip their sum. One global
batch per step (no shuffling)."""
import json

import numpy as np
import tensorflow as tf

BATCH, RATE = 128, 0.05
x = np.random.RandomState(0).randn(256, 8).astype("float32")
y = (x @ np.arange(8, dtype="float32")[:, None] * 0.3).astype("float32")
model = tf.keras.Sequential([tf.keras.Input((8,)), tf.keras.layers.Dense(1, kernel_initializer="zeros")])
model.compile(optimizer=tf.keras.optimizers.SGD(RATE, global_clipnorm=1.0), loss="mse")
model.fit(x, y, batch_size=BATCH, epochs=20, shuffle=False, verbose=0)
print("WEIGHTS " + json.dumps(np.concatenate([w.ravel() for w in model.get_weights()]).tolist()))
