"""Transfer learning then fine-tuning (the "Transfer learning and
fine-tuning" guide's two phases): a base model built by a function stands
in for a pretrained backbone (no download), frozen with trainable = False
under a new head; compiled and trained; then unfrozen and recompiled with
a 10x smaller learning rate and trained again from the epoch it reached."""
import numpy as np
import tensorflow as tf
from tensorflow import keras

rng = np.random.default_rng(9)
images = rng.random((640, 12, 12, 3)).astype("float32")
labels = (images[..., 0].mean(axis=(1, 2)) > images[..., 2].mean(axis=(1, 2))).astype("float32")
train_ds = tf.data.Dataset.from_tensor_slices((images[:512], labels[:512])).batch(32)
validation_ds = tf.data.Dataset.from_tensor_slices((images[512:], labels[512:])).batch(32)


def backbone():
    inputs = keras.Input(shape=(12, 12, 3))
    x = keras.layers.Conv2D(8, 3, activation="relu")(inputs)
    x = keras.layers.Conv2D(8, 3, activation="relu")(x)
    return keras.Model(inputs, x, name="backbone")


base_model = backbone()
base_model.trainable = False

inputs = keras.Input(shape=(12, 12, 3))
x = base_model(inputs, training=False)
x = keras.layers.GlobalAveragePooling2D()(x)
x = keras.layers.Dropout(0.2)(x)
outputs = keras.layers.Dense(1)(x)
model = keras.Model(inputs, outputs)

model.compile(optimizer=keras.optimizers.Adam(1e-2),
              loss=keras.losses.BinaryCrossentropy(from_logits=True),
              metrics=[keras.metrics.BinaryAccuracy()])
initial_epochs = 2
history = model.fit(train_ds, epochs=initial_epochs, validation_data=validation_ds)

base_model.trainable = True
model.compile(optimizer=keras.optimizers.Adam(1e-3),
              loss=keras.losses.BinaryCrossentropy(from_logits=True),
              metrics=[keras.metrics.BinaryAccuracy()])
history_fine = model.fit(train_ds, epochs=initial_epochs + 2, initial_epoch=history.epoch[-1],
                         validation_data=validation_ds)
