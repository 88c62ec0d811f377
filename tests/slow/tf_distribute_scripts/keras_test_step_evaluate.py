"""A test_step reporting self.compute_loss through a tracker, evaluated with
known weights (zeros: every prediction 0, every target 3, so the loss is
exactly 9.0). Under a strategy Keras divides compute_loss by the number of
replicas; the conversion multiplies it back for what the step reports."""
import tensorflow as tf


class Zero(tf.keras.Model):
    def __init__(self):
        super().__init__()
        self.dense = tf.keras.layers.Dense(1, kernel_initializer="zeros")
        self.loss_tracker = tf.keras.metrics.Mean(name="loss")

    def call(self, x):
        return self.dense(x)

    @property
    def metrics(self):
        return [self.loss_tracker]

    def test_step(self, data):
        x, y = data
        loss = self.compute_loss(x, y, self(x))
        self.loss_tracker.update_state(loss)
        return {"loss": self.loss_tracker.result()}


x = tf.ones([256, 2])
y = tf.fill([256, 1], 3.0)
val = tf.data.Dataset.from_tensor_slices((x, y)).batch(32)
model = Zero()
model.compile(optimizer=tf.keras.optimizers.SGD(learning_rate=0.0), loss="mse")
model.fit(val, epochs=1, verbose=0)
print("EVAL", model.evaluate(val, verbose=0))
