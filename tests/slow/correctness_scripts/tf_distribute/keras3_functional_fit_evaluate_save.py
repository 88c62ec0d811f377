# tfdist-test: ranks=2 disjoint=yes timeout=600
"""Keras 3 (import keras, not tf.keras): a functional model trained by fit()
on a tf.data dataset with validation data and a ModelCheckpoint, then
evaluate() and save(). Under MultiWorkerMirroredStrategy Keras 3.15 hands
strategy.reduce a nested first batch and scalar metrics along axis 0
(keras-team/keras#20585), and its callbacks write from every worker to the
path given: the conversion must make all of this run, with the variables
equal on every worker and the chief alone writing the files."""
import keras
import numpy as np
import tensorflow as tf

N, BATCH = 384, 16


def label_of(sample):
    return np.int64(sample.sum() > 4.0)


keras.utils.set_random_seed(4)
rng = np.random.RandomState(6)
samples = rng.rand(N, 8).astype(np.float32)
labels = (samples.sum(axis=1) > 4.0).astype(np.int64)

train = tf.data.Dataset.from_tensor_slices((samples[:320], labels[:320])).shuffle(320, seed=2).batch(BATCH)
val = tf.data.Dataset.from_tensor_slices((samples[320:], labels[320:])).batch(BATCH)

inputs = keras.Input(shape=(8,))
hidden = keras.layers.Dense(16, activation="relu")(inputs)
outputs = keras.layers.Dense(2)(hidden)
model = keras.Model(inputs, outputs)
model.compile(optimizer=keras.optimizers.SGD(0.05),
              loss=keras.losses.SparseCategoricalCrossentropy(from_logits=True),
              metrics=["accuracy"])
model.fit(train, validation_data=val, epochs=3, verbose=2,
          callbacks=[keras.callbacks.ModelCheckpoint("best.weights.h5", save_weights_only=True,
                                                     save_best_only=True, monitor="val_loss")])
loss, accuracy = model.evaluate(val, verbose=0)
print(f"held-out loss {loss:.4f} accuracy {accuracy:.4f}")
model.save("model.keras")
