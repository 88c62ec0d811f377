"""Whole-model saving in the native format (the "Save and load models"
tutorial shape): a function builds and compiles the model, it is trained,
saved as .keras, loaded back with keras.models.load_model and evaluated;
a second model restores the saved weights."""
import numpy as np
import tensorflow as tf

rng = np.random.default_rng(7)
train_images = rng.random((800, 64)).astype("float32")
train_labels = (train_images[:, :32].sum(axis=1) > train_images[:, 32:].sum(axis=1)).astype("int64")
test_images, test_labels = train_images[:200], train_labels[:200]


def create_model():
    model = tf.keras.Sequential([
        tf.keras.layers.Input(shape=(64,)),
        tf.keras.layers.Dense(32, activation="relu"),
        tf.keras.layers.Dropout(0.2),
        tf.keras.layers.Dense(2),
    ])
    model.compile(optimizer="adam",
                  loss=tf.keras.losses.SparseCategoricalCrossentropy(from_logits=True),
                  metrics=[tf.keras.metrics.SparseCategoricalAccuracy()])
    return model


model = create_model()
model.fit(train_images, train_labels, epochs=3, batch_size=32)
model.save("my_model.keras")
model.save_weights("my_model.weights.h5")

new_model = tf.keras.models.load_model("my_model.keras")
loss, acc = new_model.evaluate(test_images, test_labels, verbose=2)
print("Restored model, accuracy: {:5.2f}%".format(100 * acc))
