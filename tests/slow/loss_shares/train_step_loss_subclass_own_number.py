"""A train_step calling a Loss subclass of the script whose ``call``
returns one number of its own (a sum over the batch divided by its rows,
the shape of a Barlow Twins loss): Keras 3's mean reduction returns a
scalar as it is (``reduce_values``), so nothing divides it by the replicas;
a term from a Keras Loss object inside another subclass is divided by Keras
already. The conversion divides the first loss once and keeps the second."""
import json

import numpy as np
import keras
import tensorflow as tf

BATCH, RATE = 128, 0.05


class SumPerRow(keras.losses.Loss):
    def call(self, y_true, y_pred):
        return tf.reduce_sum(tf.square(y_true - y_pred)) / tf.cast(tf.shape(y_true)[0], tf.float32)


class Regressor(keras.Model):
    def __init__(self):
        super().__init__()
        self.net = keras.layers.Dense(1, kernel_initializer="zeros")
        self.own = SumPerRow()
        self.tracker = keras.metrics.Mean(name="loss")

    def call(self, inputs):
        return self.net(inputs)

    def train_step(self, data):
        xb, yb = data
        with tf.GradientTape() as tape:
            pred = self(xb, training=True)
            loss = self.own(yb, pred)
        grads = tape.gradient(loss, self.trainable_variables)
        self.optimizer.apply_gradients(zip(grads, self.trainable_variables))
        self.tracker.update_state(loss)
        return {"loss": self.tracker.result()}


x = np.random.RandomState(3).randn(256, 8).astype("float32")
y = (x @ np.arange(8, dtype="float32")[:, None] * 0.1).astype("float32")
model = Regressor()
model.compile(optimizer=keras.optimizers.SGD(RATE))
model.fit(x, y, batch_size=BATCH, epochs=4, shuffle=False, verbose=0)
print("WEIGHTS " + json.dumps(np.concatenate([w.ravel() for w in model.get_weights()]).tolist()))
