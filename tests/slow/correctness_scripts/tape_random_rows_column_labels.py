# tfdist-test: ranks=2 disjoint=no coverage=0.9
"""A GradientTape loop drawing each step's rows by a NumPy index after the
script seeded NumPy (the TensorFlow cookbooks' shape), the labels fed as a
column made of the drawn rows (``np.transpose([y_vals_train[idx]])``). Both
arrays are rows the step reads: they are sliced together, so every sample
keeps its label. Before, the samples alone were sliced and each rank paired
its samples with the labels of other rows (verify FAILs that conversion).
A small pool (96 rows, 1920 draws) so the original draws every row."""
import numpy as np
import tensorflow as tf


def label_of(sample):
    return np.array([sample[0] * 2.0 - sample[2]], dtype=np.float32)


np.random.seed(3)
tf.random.set_seed(3)
x_vals = np.random.rand(120, 4).astype(np.float32)
y_vals = np.array([label_of(s)[0] for s in x_vals], dtype=np.float32)
train_indices = np.random.choice(len(x_vals), 96, replace=False)
x_vals_train = x_vals[train_indices]
y_vals_train = y_vals[train_indices]

model = tf.keras.Sequential([tf.keras.layers.Dense(1, input_shape=(4,))])
optimizer = tf.keras.optimizers.SGD(learning_rate=0.05)
loss_fn = tf.keras.losses.MeanAbsoluteError()
batch_size = 16
for i in range(120):
    rand_index = np.random.choice(len(x_vals_train), size=batch_size)
    rand_x = x_vals_train[rand_index]
    rand_y = np.transpose([y_vals_train[rand_index]])
    with tf.GradientTape() as tape:
        output = model(rand_x)
        loss = loss_fn(rand_y, output)
    grads = tape.gradient(loss, model.trainable_variables)
    optimizer.apply_gradients(zip(grads, model.trainable_variables))
print("loss", float(loss))
