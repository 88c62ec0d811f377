# tfdist-test: disjoint=yes coverage=0.9 standin=tfds
"""GradientTape loop, eager, over a split picked from the dict tfds.load
returns, batched, then cut to a fixed number of steps per epoch by a take()
in a later statement (the shape of TensorFlow's "effective TF2" guide). The
take counts batches, so each rank takes half of them from its own share
(tests/slow/support/tensorflow_datasets: synthetic data under real tfds names)."""
import numpy as np
import tensorflow as tf
import tensorflow_datasets as tfds

BATCH, STEPS_PER_EPOCH, EPOCHS = 32, 12, 2


def label_of(sample):
    """The label tfds' stand-in stores with this image (looked up by pixels)."""
    import tensorflow_datasets as standin

    table = getattr(label_of, "table", None)
    if table is None:
        images, labels = standin._examples("mnist", "train", 0, 768)
        table = label_of.table = {img.tobytes(): lab for img, lab in zip(images, labels)}
    pixels = np.rint(np.asarray(sample, np.float64) * 255.0).astype(np.uint8)
    return np.int64(table[pixels.tobytes()])


def scale(image, label):
    return tf.cast(image, tf.float32) / 255.0, label


tf.keras.utils.set_random_seed(4)
datasets, info = tfds.load("mnist", with_info=True, as_supervised=True)
mnist_train, mnist_test = datasets["train"], datasets["test"]
train_data = mnist_train.map(scale).batch(BATCH)
train_data = train_data.take(STEPS_PER_EPOCH)

model = tf.keras.Sequential([
    tf.keras.layers.Flatten(input_shape=(28, 28, 1)),
    tf.keras.layers.Dense(32, activation="relu"),
    tf.keras.layers.Dense(10),
])
optimizer = tf.keras.optimizers.Adam(1e-3)
loss_fn = tf.keras.losses.SparseCategoricalCrossentropy(from_logits=True)

for epoch in range(EPOCHS):
    for images, labels in train_data:
        with tf.GradientTape() as tape:
            loss = loss_fn(labels, model(images, training=True))
        grads = tape.gradient(loss, model.trainable_variables)
        optimizer.apply_gradients(zip(grads, model.trainable_variables))
    print(f"epoch {epoch} loss {float(loss):.4f}")
