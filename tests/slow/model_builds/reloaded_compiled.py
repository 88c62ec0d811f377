"""A model trained, saved, loaded back (compile=False) under the same name,
compiled again and evaluated (a held-out book's save/load example): the
second compile() is of the loaded model, not of the one fit() trained."""
import numpy as np
import tensorflow as tf

tf.keras.utils.set_random_seed(2)
rng = np.random.default_rng(0)
x = rng.normal(size=(512, 8)).astype("float32")
y = (x @ rng.normal(size=(8, 1))).astype("float32")
db = tf.data.Dataset.from_tensor_slices((x, y)).shuffle(512, seed=1).batch(32)
network = tf.keras.Sequential([tf.keras.Input((8,)), tf.keras.layers.Dense(16, activation="relu"),
                               tf.keras.layers.Dense(1)])
network.compile(optimizer=tf.keras.optimizers.SGD(0.02), loss="mse")
network.fit(db, epochs=3)
network.save("model.h5")
del network
network = tf.keras.models.load_model("model.h5", compile=False)
network.compile(optimizer=tf.keras.optimizers.SGD(0.02), loss="mse", metrics=["mae"])
print(network.evaluate(tf.data.Dataset.from_tensor_slices((x, y)).batch(64)))
