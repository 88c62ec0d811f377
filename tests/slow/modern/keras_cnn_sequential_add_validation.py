"""Convolutional classifier built layer by layer (the "Convolutional Neural
Network" tutorial shape): models.Sequential() then model.add(...) for
Conv2D / MaxPooling2D / Flatten / Dense, compiled with from_logits, trained
with validation_data, history read afterwards. Small synthetic 16x16 RGB
images whose label is the dominant colour channel stand in for CIFAR-10."""
import numpy as np
import tensorflow as tf
from tensorflow.keras import datasets, layers, models

rng = np.random.default_rng(2)


def images(n):
    x = rng.random((n, 16, 16, 3)).astype("float32")
    x[np.arange(n), :, :, rng.integers(0, 3, n)] += 0.5
    return x, x.mean(axis=(1, 2)).argmax(axis=1)


train_images, train_labels = images(768)
test_images, test_labels = images(192)

model = models.Sequential()
model.add(layers.Input(shape=(16, 16, 3)))
model.add(layers.Conv2D(8, (3, 3), activation="relu"))
model.add(layers.MaxPooling2D((2, 2)))
model.add(layers.Conv2D(16, (3, 3), activation="relu"))
model.add(layers.Flatten())
model.add(layers.Dense(16, activation="relu"))
model.add(layers.Dense(3))

model.compile(optimizer="adam",
              loss=tf.keras.losses.SparseCategoricalCrossentropy(from_logits=True),
              metrics=["accuracy"])
history = model.fit(train_images, train_labels, epochs=3, batch_size=32,
                    validation_data=(test_images, test_labels))
test_loss, test_acc = model.evaluate(test_images, test_labels, verbose=2)
print("test accuracy", test_acc, "epochs", len(history.history["loss"]))
