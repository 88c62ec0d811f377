"""Tiny single-process Keras fit script (converted, then run as a Slurm job):
64 samples, batch 8, 1 epoch = 8 optimizer steps on one process."""
import numpy as np
import tensorflow as tf

tf.keras.utils.set_random_seed(1234)
rng = np.random.RandomState(0)
x = rng.randn(64, 4).astype("float32")
y = (x @ rng.randn(4, 1) + 0.1).astype("float32")

model = tf.keras.Sequential([tf.keras.layers.Dense(8, activation="relu", input_shape=(4,)),
                             tf.keras.layers.Dense(1)])
model.compile(loss="mse", optimizer=tf.keras.optimizers.SGD(learning_rate=0.01))
model.fit(x, y, batch_size=8, epochs=1, verbose=2)
model.save_weights("final.weights.h5")
print("trained")
