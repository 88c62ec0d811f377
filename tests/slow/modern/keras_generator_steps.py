"""fit() on a Python generator drawing random batches with NumPy, bounded
by steps_per_epoch (the shape of forecasting and GAN-era tutorials)."""
import numpy as np
import tensorflow as tf

rng = np.random.default_rng(11)
x = rng.normal(size=(4096, 5)).astype("float32")
y = (x[:, :1] * 2.0 - x[:, 1:2] + 0.05 * rng.normal(size=(4096, 1))).astype("float32")


def batches(batch_size):
    while True:
        rows = np.random.randint(0, len(x), size=batch_size)
        yield x[rows], y[rows]


tf.keras.utils.set_random_seed(4)
model = tf.keras.Sequential([tf.keras.Input(shape=(5,)), tf.keras.layers.Dense(8, activation="relu"),
                             tf.keras.layers.Dense(1)])
model.compile(optimizer=tf.keras.optimizers.SGD(0.01), loss="mse")
history = model.fit(batches(32), steps_per_epoch=60, epochs=3, verbose=2)
print("final loss", history.history["loss"][-1])
