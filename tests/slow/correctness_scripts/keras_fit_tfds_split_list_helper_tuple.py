# tfdist-test: disjoint=yes coverage=0.9 standin=tfds
"""Keras model.fit on two splits of one tfds.load(split=[...]) that a user
helper unpacks, batches and returns as a tuple, unpacked again by the caller
(tests/slow/support/tensorflow_datasets: synthetic data under real tfds
names). Each split is divided where the helper unpacks it.
run_eagerly=True so the probe sees the batches fit consumes."""
import numpy as np
import tensorflow as tf
import tensorflow_datasets as tfds

BATCH_SIZE = 32
EPOCHS = 2


def label_of(sample):
    """The label tfds' stand-in stores with this image (looked up by pixels)."""
    import tensorflow_datasets as standin

    table = getattr(label_of, "table", None)
    if table is None:
        images, labels = standin._examples("mnist", "train", 0, 1024)
        table = label_of.table = {img.tobytes(): lab for img, lab in zip(images, labels)}
    pixels = np.rint(np.asarray(sample, np.float64) * 255.0).astype(np.uint8)
    return np.int64(table[pixels.tobytes()])


def load_data():
    train_dataset, val_dataset = tfds.load("mnist", split=["train[:768]", "train[768:1024]"], as_supervised=True)

    def normalize(image, label):
        return tf.cast(image, tf.float32) / 255.0, label

    train_dataset = train_dataset.map(normalize).batch(BATCH_SIZE).prefetch(tf.data.AUTOTUNE)
    val_dataset = val_dataset.map(normalize).batch(BATCH_SIZE).cache()
    return train_dataset, val_dataset


def main():
    tf.keras.utils.set_random_seed(8)
    train_ds, validation_ds = load_data()
    model = tf.keras.Sequential([
        tf.keras.layers.Conv2D(4, 3, activation="relu", input_shape=(28, 28, 1)),
        tf.keras.layers.MaxPooling2D(),
        tf.keras.layers.Flatten(),
        tf.keras.layers.Dense(10),
    ])
    model.compile(optimizer=tf.keras.optimizers.Adam(1e-3),
                  loss=tf.keras.losses.SparseCategoricalCrossentropy(from_logits=True),
                  metrics=["accuracy"], run_eagerly=True)
    model.fit(train_ds, validation_data=validation_ds, epochs=EPOCHS, verbose=2)


if __name__ == "__main__":
    main()
