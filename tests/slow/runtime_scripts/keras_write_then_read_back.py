"""Keras fit, then a file the script writes (np.save of a large array) and
reads straight back (np.load): converted, the write runs on rank 0 only,
so every other rank must wait for it before reading."""
import numpy as np
import tensorflow as tf

rng = np.random.RandomState(0)
x = rng.rand(256, 8).astype("float32")
y = (x.sum(axis=1) > 4).astype("int64")
model = tf.keras.Sequential([tf.keras.layers.Dense(8, activation="relu", input_shape=(8,)), tf.keras.layers.Dense(2)])
model.compile(optimizer=tf.keras.optimizers.SGD(0.05),
              loss=tf.keras.losses.SparseCategoricalCrossentropy(from_logits=True))
model.fit(x, y, epochs=1, batch_size=32, verbose=0)
table = np.tile(np.concatenate([w.reshape(-1) for w in model.get_weights()]), 200000)
np.save("weights_table.npy", table)
loaded = np.load("weights_table.npy")
assert loaded.shape == table.shape and np.array_equal(loaded, table)
print("read back", loaded.shape)
