# tfdist-test: disjoint=yes
"""Two models trained one after the other with one callbacks list and one
dict of fit() settings (fit(**fit_config)), as experiment notebooks do. A
broadcast callback put in the shared list would broadcast the first model
only: the second would start from a different random state on every rank.
The final check (bitwise-identical variables) covers both models."""
import numpy as np
import tensorflow as tf

N = 480


def label_of(sample):
    return np.int64(int(sample[1] * 1000) % 3)


# No TensorFlow seed: every rank draws its own initial weights, so only the
# broadcast makes them equal -- for each model.
rng = np.random.RandomState(4)
x_train = rng.rand(N, 8).astype(np.float32)
y_train = np.array([label_of(s) for s in x_train], dtype=np.int64)

callbacks = [tf.keras.callbacks.TerminateOnNaN()]
fit_config = dict(batch_size=24, epochs=2, verbose=2)


def build(width):
    model = tf.keras.Sequential([
        tf.keras.layers.Dense(width, activation="relu", input_shape=(8,)),
        tf.keras.layers.Dense(3),
    ])
    model.compile(optimizer=tf.keras.optimizers.SGD(learning_rate=0.05),
                  loss=tf.keras.losses.SparseCategoricalCrossentropy(from_logits=True))
    return model


small = build(8)
small.fit(x_train, y_train, callbacks=callbacks, **fit_config)
wide = build(32)
wide.fit(x_train, y_train, callbacks=callbacks, **fit_config)
