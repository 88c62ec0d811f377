"""tf.keras: tfkeras_train_step_classifier.py's model with its loss a Keras
Loss object made in __init__ (a mean reduction) instead of a mean the step
computes: converted for tf.distribute, the object is built with
reduction="none" and the step averages it and divides it by the number of
replicas (replica_mean_loss), as Keras 3's mean reduction is divided under a
strategy. Plain SGD: a loss divided twice or not at all learns at half or
twice the rate (test_train_step_tf_distribute.py)."""
import numpy as np
import tensorflow as tf

N, BATCH, CLASSES = 1024, 32, 4


def label_of(sample):
    return np.int64(np.argmax(sample @ WEIGHTS))


tf.keras.utils.set_random_seed(3)
rng = np.random.RandomState(8)
WEIGHTS = rng.normal(size=(12, CLASSES)).astype(np.float32)
samples = rng.normal(size=(N, 12)).astype(np.float32)
labels = np.argmax(samples @ WEIGHTS, axis=1).astype(np.int64)


class StepClassifier(tf.keras.Model):
    def __init__(self):
        super().__init__()
        self.hidden = tf.keras.layers.Dense(32, activation="relu")
        self.logits = tf.keras.layers.Dense(CLASSES)
        self.loss_fn = tf.keras.losses.SparseCategoricalCrossentropy(from_logits=True)
        self.loss_tracker = tf.keras.metrics.Mean(name="loss")
        self.accuracy = tf.keras.metrics.SparseCategoricalAccuracy(name="accuracy")

    def call(self, x, training=False):
        return self.logits(self.hidden(x))

    @property
    def metrics(self):
        return [self.loss_tracker, self.accuracy]

    def train_step(self, data):
        x, y = data
        with tf.GradientTape() as tape:
            logits = self(x, training=True)
            loss = self.loss_fn(y, logits)
        grads = tape.gradient(loss, self.trainable_variables)
        self.optimizer.apply_gradients(zip(grads, self.trainable_variables))
        self.loss_tracker.update_state(loss)
        self.accuracy.update_state(y, logits)
        return {"loss": self.loss_tracker.result(), "accuracy": self.accuracy.result()}


train = tf.data.Dataset.from_tensor_slices((samples, labels)).shuffle(N, seed=5).batch(BATCH)
model = StepClassifier()
model.compile(optimizer=tf.keras.optimizers.SGD(learning_rate=0.02))
history = model.fit(train, epochs=4, verbose=2)
print("final loss", history.history["loss"][-1])
