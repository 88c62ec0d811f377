"""A Keras model's own train_step whose loss is a SUM over the batch with
a second sum added in place (``+=``), trained with fit on arrays. Keras
divides none of it: the conversion divides the whole by the number of
replicas once. A sum over twice the rows is twice a sum over the rows, so
one process reaches the converted run's weights on the global batch at the
original rate (a mean reaches them at the scaled rate)."""
import json

import numpy as np
import tensorflow as tf

BATCH, RATE = 128, 0.0001


class Summed(tf.keras.Model):
    def __init__(self):
        super().__init__()
        self.dense = tf.keras.layers.Dense(1, kernel_initializer="zeros")

    def call(self, inputs):
        return self.dense(inputs)

    def train_step(self, data):
        xb, yb = data
        with tf.GradientTape() as tape:
            loss = tf.reduce_sum(tf.square(self(xb, training=True) - yb))
            loss += 0.1 * tf.reduce_sum(tf.abs(self(xb, training=True) - yb))
        grads = tape.gradient(loss, self.trainable_variables)
        self.optimizer.apply_gradients(zip(grads, self.trainable_variables))
        return {"loss": loss}


x = np.random.RandomState(2).randn(256, 8).astype("float32")
y = (x @ np.arange(8, dtype="float32")[:, None] * 0.3).astype("float32")
model = Summed()
model.compile(optimizer=tf.keras.optimizers.SGD(RATE))
model.fit(x, y, batch_size=BATCH, epochs=20, shuffle=False, verbose=0)
print("WEIGHTS " + json.dumps(np.concatenate([w.ravel() for w in model.get_weights()]).tolist()))
