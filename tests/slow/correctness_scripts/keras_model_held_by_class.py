# tfdist-test: disjoint=yes coverage=0.9
"""An experiment class that builds, compiles and fits its Keras model
through self.model."""
import numpy as np
import tensorflow as tf


def label_of(sample):
    return np.int64(int(sample[0] * 1000) % 3)


class Experiment:
    def __init__(self, lr):
        self.model = tf.keras.Sequential([tf.keras.layers.Dense(3, input_shape=(8,))])
        self.model.compile(optimizer=tf.keras.optimizers.Adam(lr),
                           loss=tf.keras.losses.SparseCategoricalCrossentropy(from_logits=True))

    def run(self, x, y):
        return self.model.fit(x, y, batch_size=24, epochs=2, verbose=2)


tf.keras.utils.set_random_seed(24)
x = np.random.RandomState(5).rand(576, 8).astype("float32")
y = (x[:, 0] * 1000).astype("int64") % 3
Experiment(0.01).run(x, y)
