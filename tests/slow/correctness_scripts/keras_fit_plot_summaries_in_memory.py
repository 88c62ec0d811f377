# tfdist-test: ranks=2 disjoint=yes requires=matplotlib
"""Keras fit whose epoch-end callback logs a plot as a summary image: the
figure is saved into an in-memory buffer (io.BytesIO) and decoded back on
the same process (the TensorBoard image-summary recipe). A buffer is no
file: its savefig runs on every rank (guarded on rank 0, the other ranks
would decode an empty buffer and stop); only the summary writer is rank 0's."""
import io

import matplotlib

matplotlib.use("Agg")
import matplotlib.pyplot as plt  # noqa: E402
import numpy as np  # noqa: E402
import tensorflow as tf  # noqa: E402

N = 256


def label_of(sample):
    return np.int64(sample[0] + sample[2] > 1.0)


def plot_to_image(figure):
    buf = io.BytesIO()
    plt.savefig(buf, format="png")
    plt.close(figure)
    buf.seek(0)
    image = tf.image.decode_png(buf.getvalue(), channels=4)
    return tf.expand_dims(image, 0)


tf.keras.utils.set_random_seed(11)
rng = np.random.RandomState(12)
x_train = rng.rand(N, 4).astype(np.float32)
y_train = np.array([label_of(s) for s in x_train], dtype=np.int64)
model = tf.keras.Sequential([tf.keras.layers.Dense(8, activation="relu", input_shape=(4,)), tf.keras.layers.Dense(2)])
model.compile(optimizer=tf.keras.optimizers.SGD(learning_rate=0.05),
              loss=tf.keras.losses.SparseCategoricalCrossentropy(from_logits=True), run_eagerly=True)
file_writer = tf.summary.create_file_writer("logs/plots")


def log_plot(epoch, logs):
    figure = plt.figure()
    plt.plot(np.arange(4), model.layers[0].kernel.numpy()[:, 0])
    with file_writer.as_default():
        tf.summary.image("kernel", plot_to_image(figure), step=epoch)


model.fit(x_train, y_train, batch_size=16, epochs=2, verbose=2,
          callbacks=[tf.keras.callbacks.LambdaCallback(on_epoch_end=log_plot)])
