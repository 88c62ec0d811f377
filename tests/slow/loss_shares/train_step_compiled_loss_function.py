"""A model whose train_step calls ``self.loss`` -- what compile(loss=...)
was given, here through an override forwarding ``**kwargs`` to Keras's
compile (the shape of the diffusion-model trainers) -- and the loss is a
Keras loss *function* (``mean_squared_error``: per-example values, no
reduction Keras would divide), averaged by the step. Nothing of it is
divided by Keras: the conversion divides it by the replicas once."""
import json

import numpy as np
import keras
import tensorflow as tf

BATCH, RATE = 128, 0.05


class Denoiser(keras.Model):
    def __init__(self):
        super().__init__()
        self.net = keras.layers.Dense(1, kernel_initializer="zeros")
        self.tracker = keras.metrics.Mean(name="loss")

    def compile(self, **kwargs):
        super().compile(**kwargs)

    def call(self, inputs):
        return self.net(inputs)

    def train_step(self, data):
        xb, yb = data
        with tf.GradientTape() as tape:
            pred = self(xb, training=True)
            loss = tf.reduce_mean(self.loss(yb, pred))
        grads = tape.gradient(loss, self.trainable_variables)
        self.optimizer.apply_gradients(zip(grads, self.trainable_variables))
        self.tracker.update_state(loss)
        return {"loss": self.tracker.result()}


x = np.random.RandomState(2).randn(256, 8).astype("float32")
y = (x @ np.arange(8, dtype="float32")[:, None] * 0.1).astype("float32")
model = Denoiser()
model.compile(optimizer=keras.optimizers.SGD(RATE), loss=keras.losses.mean_squared_error)
model.fit(x, y, batch_size=BATCH, epochs=20, shuffle=False, verbose=0)
print("WEIGHTS " + json.dumps(np.concatenate([w.ravel() for w in model.get_weights()]).tolist()))
