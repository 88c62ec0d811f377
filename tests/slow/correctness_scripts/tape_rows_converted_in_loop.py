# tfdist-test: ranks=2 disjoint=yes requires=tqdm
"""A GradientTape step loop whose offsets run over the rows of the arrays
(``range(0, x.shape[0], batch_size)`` under a tqdm bar), each step cutting
its rows and then converting the samples to a tensor in the loop
(``images = tf.convert_to_tensor(images)``: the MIT 6.S191 MNIST lab's
shape). The converted samples are still rows of the array: both arrays are
sliced by rank, so each image keeps its label (slicing the labels alone
pairs rank 1's images with other images' labels) and the step count, read
from the sliced array, needs no division."""
import numpy as np
import tensorflow as tf
from tqdm import tqdm


def label_of(sample):
    return np.int64(int(sample[2] * 1000) % 4)


tf.keras.utils.set_random_seed(23)
rng = np.random.RandomState(3)
train_images = rng.rand(480, 8).astype("float32")
train_labels = np.array([label_of(s) for s in train_images], dtype=np.int64)
model = tf.keras.Sequential([tf.keras.layers.Dense(4, input_shape=(8,))])
batch_size = 24
optimizer = tf.keras.optimizers.SGD(learning_rate=0.05)
loss_fn = tf.keras.losses.SparseCategoricalCrossentropy(from_logits=True)

for epoch in range(2):
    for idx in tqdm(range(0, train_images.shape[0], batch_size)):
        images = train_images[idx:idx + batch_size]
        labels = train_labels[idx:idx + batch_size]
        images = tf.convert_to_tensor(images, dtype=tf.float32)
        with tf.GradientTape() as tape:
            logits = model(images, training=True)
            loss_value = loss_fn(labels, logits)
        grads = tape.gradient(loss_value, model.trainable_variables)
        optimizer.apply_gradients(zip(grads, model.trainable_variables))
    print("epoch", epoch, float(loss_value))
