"""Keras fit with a learning-rate schedule class of the script's own (a
Transformer-style warmup, not registered with Keras)."""
import numpy as np
import tensorflow as tf


class CustomSchedule(tf.keras.optimizers.schedules.LearningRateSchedule):
    def __init__(self, d_model, warmup_steps=40):
        super().__init__()
        self.d_model = d_model
        self.warmup_steps = warmup_steps

    def __call__(self, step):
        step = tf.cast(step, dtype=tf.float32) + 1.0
        arg1 = tf.math.rsqrt(step)
        arg2 = step * (self.warmup_steps ** -1.5)
        return tf.math.rsqrt(tf.cast(self.d_model, tf.float32)) * tf.math.minimum(arg1, arg2)

    def get_config(self):
        return {"d_model": self.d_model, "warmup_steps": self.warmup_steps}


def label_of(sample):
    return np.int64(int(sample[0] * 1000) % 3)


rng = np.random.RandomState(0)
x = rng.rand(512, 8).astype("float32")
y = np.array([label_of(s) for s in x])
optimizer = tf.keras.optimizers.Adam(CustomSchedule(16))
model = tf.keras.Sequential([tf.keras.layers.Dense(16, activation="relu", input_shape=(8,)), tf.keras.layers.Dense(3)])
model.compile(optimizer=optimizer, loss=tf.keras.losses.SparseCategoricalCrossentropy(from_logits=True))
model.fit(x, y, epochs=2, batch_size=32, verbose=2)
