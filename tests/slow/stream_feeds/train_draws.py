"""A GradientTape loop counting its steps, each batch drawn by a call into
a module tfdist does not read (word2vec's ``batch_x, batch_y =
next_batch(...)`` shape): the library sits on PYTHONPATH, not beside the
script (tests/slow/test_stream_feeds_runtime.py)."""
import numpy as np
import tensorflow as tf
import batchlib

rng = np.random.RandomState(0)
features = rng.normal(size=(960, 2)).astype("float32")
labels = features @ np.array([[2.0], [-3.4]], dtype="float32") + 4.2
corpus = batchlib.Corpus(features, labels)
model = tf.keras.Sequential([tf.keras.layers.Dense(1)])
optimizer = tf.keras.optimizers.SGD(0.03)
loss_fn = tf.keras.losses.MeanSquaredError()

for step in range(300):
    batch_x, batch_y = corpus.next_batch(10)
    with tf.GradientTape() as tape:
        loss = loss_fn(batch_y, model(batch_x))
    grads = tape.gradient(loss, model.trainable_variables)
    optimizer.apply_gradients(zip(grads, model.trainable_variables))
    if step % 100 == 0:
        print(step, float(loss))
