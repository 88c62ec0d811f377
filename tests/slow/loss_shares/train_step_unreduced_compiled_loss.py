"""A train_step averaging the loss compile() was given with no reduction
(``keras.losses.MeanSquaredError(reduction="none")``, then
``tf.reduce_mean(self.compute_loss(...))``, a textual-inversion trainer's
shape): Keras 3 returns the per-example values undivided, so the step's
mean is its own; the conversion divides it by the replicas once."""
import json

import numpy as np
import keras
import tensorflow as tf

BATCH, RATE = 128, 0.05


class Regressor(keras.Model):
    def __init__(self):
        super().__init__()
        self.net = keras.layers.Dense(1, kernel_initializer="zeros")
        self.tracker = keras.metrics.Mean(name="loss")

    def call(self, inputs):
        return self.net(inputs)

    def train_step(self, data):
        xb, yb = data
        with tf.GradientTape() as tape:
            pred = self(xb, training=True)
            loss = tf.reduce_mean(self.compute_loss(xb, yb, pred))
        grads = tape.gradient(loss, self.trainable_variables)
        self.optimizer.apply_gradients(zip(grads, self.trainable_variables))
        self.tracker.update_state(loss)
        return {"loss": self.tracker.result()}


x = np.random.RandomState(5).randn(256, 8).astype("float32")
y = (x @ np.arange(8, dtype="float32")[:, None] * 0.1).astype("float32")
model = Regressor()
model.compile(optimizer=keras.optimizers.SGD(RATE), loss=keras.losses.MeanSquaredError(reduction="none"))
model.fit(x, y, batch_size=BATCH, epochs=4, shuffle=False, verbose=0)
print("WEIGHTS " + json.dumps(np.concatenate([w.ravel() for w in model.get_weights()]).tolist()))
