"""The "TensorFlow 2 quickstart for experts" shape: a subclassed model, a
loss object and an optimizer at module level, Keras metric objects made at
module level and updated inside @tf.function train/test steps that return
nothing, metrics reset every epoch and printed from their results.
Synthetic 14x14 images stand in for MNIST."""
import numpy as np
import tensorflow as tf
from tensorflow.keras import Model
from tensorflow.keras.layers import Conv2D, Dense, Flatten

rng = np.random.default_rng(20)
x_train = rng.random((768, 14, 14)).astype("float32")
y_train = (x_train[:, :7].sum(axis=(1, 2)) > x_train[:, 7:].sum(axis=(1, 2))).astype("int64")
x_test, y_test = x_train[:128], y_train[:128]
x_train = x_train[..., tf.newaxis].astype("float32")
x_test = x_test[..., tf.newaxis].astype("float32")

train_ds = tf.data.Dataset.from_tensor_slices((x_train, y_train)).shuffle(768, seed=0).batch(32)
test_ds = tf.data.Dataset.from_tensor_slices((x_test, y_test)).batch(32)


class MyModel(Model):
    def __init__(self):
        super().__init__()
        self.conv1 = Conv2D(8, 3, activation="relu")
        self.flatten = Flatten()
        self.d1 = Dense(32, activation="relu")
        self.d2 = Dense(2)

    def call(self, x):
        x = self.conv1(x)
        x = self.flatten(x)
        x = self.d1(x)
        return self.d2(x)


model = MyModel()
loss_object = tf.keras.losses.SparseCategoricalCrossentropy(from_logits=True)
optimizer = tf.keras.optimizers.Adam()

train_loss = tf.keras.metrics.Mean(name="train_loss")
train_accuracy = tf.keras.metrics.SparseCategoricalAccuracy(name="train_accuracy")
test_loss = tf.keras.metrics.Mean(name="test_loss")
test_accuracy = tf.keras.metrics.SparseCategoricalAccuracy(name="test_accuracy")


@tf.function
def train_step(images, labels):
    with tf.GradientTape() as tape:
        predictions = model(images, training=True)
        loss = loss_object(labels, predictions)
    gradients = tape.gradient(loss, model.trainable_variables)
    optimizer.apply_gradients(zip(gradients, model.trainable_variables))
    train_loss(loss)
    train_accuracy(labels, predictions)


@tf.function
def test_step(images, labels):
    predictions = model(images, training=False)
    t_loss = loss_object(labels, predictions)
    test_loss(t_loss)
    test_accuracy(labels, predictions)


EPOCHS = 3
for epoch in range(EPOCHS):
    train_loss.reset_state()
    train_accuracy.reset_state()
    test_loss.reset_state()
    test_accuracy.reset_state()

    for images, labels in train_ds:
        train_step(images, labels)

    for test_images, test_labels in test_ds:
        test_step(test_images, test_labels)

    print(
        f"Epoch {epoch + 1}, "
        f"Loss: {train_loss.result():0.4f}, "
        f"Accuracy: {train_accuracy.result() * 100:0.2f}, "
        f"Test Loss: {test_loss.result():0.4f}, "
        f"Test Accuracy: {test_accuracy.result() * 100:0.2f}"
    )
