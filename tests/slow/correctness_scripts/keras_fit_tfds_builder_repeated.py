# tfdist-test: disjoint=no coverage=0.5 standin=tfds
"""Keras fit on a tfds builder's as_dataset(split=...) repeated for all the
epochs, shuffled, batched, with steps_per_epoch from the builder's info (the
shape of the Hands-On Computer Vision notebooks; the stand-in serves
synthetic data under real tfds names). run_eagerly=True so the probe sees
the batches fit consumes. disjoint=no: the shuffle buffer spans epochs, so
a rank's first "epoch" of steps need not be a clean share."""
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
        images, labels = standin._examples("mnist", "test", 0, 10000)
        table = label_of.table = {img.tobytes(): lab for img, lab in zip(images, labels)}
    pixels = np.rint(np.asarray(sample, np.float64) * 255.0).astype(np.uint8)
    return np.int64(table[pixels.tobytes()])


def prepare(features):
    return tf.cast(features["image"], tf.float32) / 255.0, features["label"]


tf.keras.utils.set_random_seed(2)
mnist_builder = tfds.builder("mnist")
mnist_builder.download_and_prepare()
train_dataset = mnist_builder.as_dataset(split=tfds.Split.TEST)
num_train_imgs = mnist_builder.info.splits["test"].num_examples
train_steps_per_epoch = num_train_imgs // BATCH_SIZE

train_dataset = train_dataset.repeat(EPOCHS).shuffle(1000, seed=5)
train_dataset = train_dataset.map(prepare).batch(BATCH_SIZE)

model = tf.keras.Sequential([
    tf.keras.layers.Flatten(input_shape=(28, 28, 1)),
    tf.keras.layers.Dense(16, activation="relu"),
    tf.keras.layers.Dense(10),
])
model.compile(optimizer=tf.keras.optimizers.SGD(0.05),
              loss=tf.keras.losses.SparseCategoricalCrossentropy(from_logits=True),
              run_eagerly=True)
model.fit(train_dataset, epochs=EPOCHS, steps_per_epoch=train_steps_per_epoch, verbose=2)
