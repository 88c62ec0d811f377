# tfdist-test: disjoint=yes coverage=0.9
"""A functional model whose layers include instances of the script's own
Layer subclasses, each made by a statement of its own and then called on
the tensors (the keras.io transformer-classifier shape): under
tf.distribute their weights are created when they are called, so the
constructions and the calls belong in the strategy's scope with the model."""
import numpy as np
import tensorflow as tf


def label_of(sample):
    return np.int64(int(sample[0] * 1000) % 3)


class Scale(tf.keras.layers.Layer):
    def build(self, input_shape):
        self.gain = self.add_weight(name="gain", shape=(input_shape[-1],), initializer="ones")

    def call(self, inputs):
        return inputs * self.gain


class Block(tf.keras.layers.Layer):
    def __init__(self, units, **kwargs):
        super().__init__(**kwargs)
        self.dense = tf.keras.layers.Dense(units, activation="relu")
        self.scale = Scale()

    def call(self, inputs):
        return self.scale(self.dense(inputs))


tf.keras.utils.set_random_seed(7)
x = np.random.RandomState(3).rand(576, 8).astype("float32")
y = np.array([label_of(s) for s in x], dtype="int64")

inputs = tf.keras.Input(shape=(8,))
scale = Scale()
block = Block(16)
hidden = scale(inputs)
hidden = block(hidden)
outputs = tf.keras.layers.Dense(3)(hidden)
model = tf.keras.Model(inputs, outputs)
model.compile(optimizer=tf.keras.optimizers.Adam(0.01),
              loss=tf.keras.losses.SparseCategoricalCrossentropy(from_logits=True))
model.fit(x, y, batch_size=24, epochs=2, verbose=2)
