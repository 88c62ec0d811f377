"""Plain single-process Keras training that saves its final trainable
variables (creation order) to the .npz file named by argv[1]."""
import sys

import numpy as np
import tensorflow as tf

tf.keras.utils.set_random_seed(3)
rng = np.random.RandomState(0)
x = rng.randn(64, 8).astype("float32")
y = x.sum(axis=1, keepdims=True)
model = tf.keras.Sequential([tf.keras.layers.Dense(4, activation="relu", input_shape=(8,)),
                             tf.keras.layers.Dense(1)])
model.compile(loss="mse", optimizer=tf.keras.optimizers.Adam(0.01))
model.fit(x, y, batch_size=16, epochs=3, verbose=0,
          callbacks=[tf.keras.callbacks.ModelCheckpoint("ckpt/w.{epoch}.h5", save_weights_only=True),
                     tf.keras.callbacks.CSVLogger("train_log.csv")])
np.savez(sys.argv[1], *[v.numpy() for v in model.trainable_variables])
