"""Data augmentation with preprocessing layers (the "Data augmentation" and
"Image classification" tutorials): a Sequential of RandomFlip /
RandomRotation / RandomZoom applied inside the model, Rescaling, a small
CNN, fit on an image dataset batched from arrays."""
import numpy as np
import tensorflow as tf
from tensorflow.keras import layers

rng = np.random.default_rng(12)
images = (rng.random((512, 20, 20, 3)) * 255).astype("float32")
labels = (images[:, :10].mean(axis=(1, 2, 3)) > images[:, 10:].mean(axis=(1, 2, 3))).astype("int64")
train_ds = tf.data.Dataset.from_tensor_slices((images, labels)).shuffle(512, seed=3).batch(32)

data_augmentation = tf.keras.Sequential([
    layers.RandomFlip("horizontal", seed=1),
    layers.RandomRotation(0.1, seed=2),
    layers.RandomZoom(0.1, seed=3),
])
num_classes = 2
model = tf.keras.Sequential([
    layers.Input(shape=(20, 20, 3)),
    data_augmentation,
    layers.Rescaling(1.0 / 255),
    layers.Conv2D(8, 3, padding="same", activation="relu"),
    layers.MaxPooling2D(),
    layers.Flatten(),
    layers.Dense(16, activation="relu"),
    layers.Dense(num_classes, name="outputs"),
])
model.compile(optimizer="adam",
              loss=tf.keras.losses.SparseCategoricalCrossentropy(from_logits=True),
              metrics=["accuracy"])
epochs = 3
history = model.fit(train_ds, epochs=epochs)
acc = history.history["accuracy"]
