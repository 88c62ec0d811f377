# tfdist-test: disjoint=no coverage=0.5 requires=tqdm
"""A GradientTape step loop under a tqdm progress bar, its step count in a
dict of settings, each step drawing its rows with np.random.choice after
the script seeded NumPy once (the MIT 6.S191 labs' shape). Converted, each
rank must draw its own rows: with the one seed every rank would train on
the very same batches (checked: the ranks' sequences of samples differ).
A small pool (100 rows, 1280 draws) so the original draws every row."""
import numpy as np
import tensorflow as tf
from tqdm import tqdm


def label_of(sample):
    return np.int64(int(sample[3] * 1000) % 4)


params = dict(num_training_iterations=80, batch_size=16, learning_rate=0.05)
np.random.seed(11)
tf.keras.utils.set_random_seed(11)
x_all = np.random.rand(100, 8).astype("float32")
y_all = np.array([label_of(s) for s in x_all], dtype=np.int64)
model = tf.keras.Sequential([tf.keras.layers.Dense(4, input_shape=(8,))])
optimizer = tf.keras.optimizers.SGD(params["learning_rate"])
loss_fn = tf.keras.losses.SparseCategoricalCrossentropy(from_logits=True)

for iter in tqdm(range(params["num_training_iterations"])):
    idx = np.random.choice(len(x_all), params["batch_size"])
    x_batch, y_batch = x_all[idx], y_all[idx]
    with tf.GradientTape() as tape:
        loss = loss_fn(y_batch, model(x_batch, training=True))
    grads = tape.gradient(loss, model.trainable_variables)
    optimizer.apply_gradients(zip(grads, model.trainable_variables))
