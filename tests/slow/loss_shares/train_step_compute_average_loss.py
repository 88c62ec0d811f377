"""A Keras model's own train_step averaging per-example losses with
tf.nn.compute_average_loss (no global_batch_size): under a strategy it
divides by the global batch itself, so the conversion must not divide it
again. Trained with fit on arrays, one global batch per step."""
import json

import numpy as np
import tensorflow as tf

BATCH, RATE = 128, 0.05


class Averaged(tf.keras.Model):
    def __init__(self):
        super().__init__()
        self.dense = tf.keras.layers.Dense(1, kernel_initializer="zeros")

    def call(self, inputs):
        return self.dense(inputs)

    def train_step(self, data):
        xb, yb = data
        with tf.GradientTape() as tape:
            per_example = tf.reduce_sum(tf.square(self(xb, training=True) - yb), axis=-1)
            loss = tf.nn.compute_average_loss(per_example)
        grads = tape.gradient(loss, self.trainable_variables)
        self.optimizer.apply_gradients(zip(grads, self.trainable_variables))
        return {"loss": loss}


x = np.random.RandomState(3).randn(256, 8).astype("float32")
y = (x @ np.arange(8, dtype="float32")[:, None] * 0.3).astype("float32")
model = Averaged()
model.compile(optimizer=tf.keras.optimizers.SGD(RATE))
model.fit(x, y, batch_size=BATCH, epochs=20, shuffle=False, verbose=0)
print("WEIGHTS " + json.dumps(np.concatenate([w.ravel() for w in model.get_weights()]).tolist()))
