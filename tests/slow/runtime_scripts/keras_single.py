"""Single-process Keras script (the kind of input `tfdist convert` takes)."""
import numpy as np
import tensorflow as tf

tf.keras.utils.set_random_seed(1234)
rng = np.random.RandomState(0)
x = rng.randn(256, 8).astype("float32")
y = (x @ rng.randn(8, 1) + 0.1).astype("float32")

model = tf.keras.Sequential([
    tf.keras.layers.Dense(16, activation="relu", input_shape=(8,)),
    tf.keras.layers.Dense(1),
])
model.compile(loss="mse", optimizer=tf.keras.optimizers.SGD(learning_rate=0.01, momentum=0.9))
model.fit(x, y, batch_size=16, epochs=2, verbose=2,
          callbacks=[tf.keras.callbacks.ModelCheckpoint("ckpt/weights.{epoch}.h5", save_weights_only=True)])
model.save_weights("final_weights.h5")
