"""A Keras model's own train_step clipping its gradients by value, trained
with fit on arrays. One global batch per step."""
import json

import numpy as np
import tensorflow as tf

BATCH, RATE = 128, 0.05


class Clipped(tf.keras.Model):
    def __init__(self):
        super().__init__()
        self.dense = tf.keras.layers.Dense(1, kernel_initializer="zeros")

    def call(self, inputs):
        return self.dense(inputs)

    def train_step(self, data):
        xb, yb = data
        with tf.GradientTape() as tape:
            loss = tf.reduce_mean(tf.square(self(xb, training=True) - yb))
        grads = tape.gradient(loss, self.trainable_variables)
        grads = [tf.clip_by_value(g, -2.0, 2.0) for g in grads]
        self.optimizer.apply_gradients(zip(grads, self.trainable_variables))
        return {"loss": loss}


x = np.random.RandomState(2).randn(256, 8).astype("float32")
y = (x @ np.arange(8, dtype="float32")[:, None] * 3.0).astype("float32")
model = Clipped()
model.compile(optimizer=tf.keras.optimizers.SGD(RATE))
model.fit(x, y, batch_size=BATCH, epochs=20, shuffle=False, verbose=0)
print("WEIGHTS " + json.dumps(np.concatenate([w.ravel() for w in model.get_weights()]).tolist()))
