"""A GradientTape loop over batches a module tfdist does not read hands out
(d2l's ``for X, y in d2l.load_array(...)`` shape): the library module sits on
PYTHONPATH, not beside the script. Which library it is decides what happens
on several workers: tests/slow/test_stream_feeds_runtime.py puts one of two
``batchlib`` modules on the path."""
import numpy as np
import tensorflow as tf
import batchlib

rng = np.random.RandomState(0)
features = rng.normal(size=(960, 2)).astype("float32")
labels = features @ np.array([[2.0], [-3.4]], dtype="float32") + 4.2
model = tf.keras.Sequential([tf.keras.layers.Dense(1)])
optimizer = tf.keras.optimizers.SGD(0.03)
loss_fn = tf.keras.losses.MeanSquaredError()

for epoch in range(3):
    for X, y in batchlib.load_array((features, labels), 10):
        with tf.GradientTape() as tape:
            l = loss_fn(y, model(X))
        grads = tape.gradient(l, model.trainable_variables)
        optimizer.apply_gradients(zip(grads, model.trainable_variables))
    print(f"epoch {epoch + 1}, loss {float(l):f}")
