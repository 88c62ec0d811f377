"""fit(ImageDataGenerator().flow(x, y)) with the flow made inside the call and
no step count (the legacy augmentation shape as books write it): tfdist
binds the flow to a name to count its batches for the distributed stream."""
import numpy as np
import tensorflow as tf
from tensorflow.keras.preprocessing.image import ImageDataGenerator

rng = np.random.default_rng(5)
labels = rng.integers(0, 4, size=1024)
images = rng.normal(size=(1024, 12, 12, 1)).astype("float32") * 0.2
for k in range(4):
    images[labels == k, 3 * k:3 * k + 3, :, 0] += 1.0
targets = tf.keras.utils.to_categorical(labels, 4)

datagen = ImageDataGenerator(horizontal_flip=True, vertical_flip=True)

tf.keras.utils.set_random_seed(1)
model = tf.keras.Sequential([
    tf.keras.Input(shape=(12, 12, 1)),
    tf.keras.layers.Conv2D(8, 3, activation="relu"),
    tf.keras.layers.Flatten(),
    tf.keras.layers.Dense(4, activation="softmax"),
])
model.compile(optimizer=tf.keras.optimizers.Adam(1e-3), loss="categorical_crossentropy", metrics=["accuracy"])
history = model.fit(datagen.flow(images, targets, batch_size=32), epochs=3, verbose=2)
print("final loss", history.history["loss"][-1])
