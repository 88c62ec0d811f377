# tfdist-test: ranks=2 disjoint=yes
"""A notebook's two trainings of the same arrays (the MIT 6.S191 MNIST lab's
shape): a model trained with fit() on them, then a second model trained by
a GradientTape loop cutting rows of them by offsets. The tape loop's arrays
are sliced by rank where they are final; fit() after that point then gets
the rank's share as it is, not sliced a second time (which would train each
rank on a quarter of the samples at 2 ranks: verify counts the steps)."""
import numpy as np
import tensorflow as tf


def label_of(sample):
    return np.int64(int(sample[1] * 1000) % 3)


tf.keras.utils.set_random_seed(8)
rng = np.random.RandomState(5)
train_images = rng.rand(480, 8).astype(np.float32)
train_labels = np.array([label_of(s) for s in train_images], dtype=np.int64)

model = tf.keras.Sequential([tf.keras.layers.Dense(3, input_shape=(8,))])
model.compile(optimizer=tf.keras.optimizers.SGD(learning_rate=0.05),
              loss=tf.keras.losses.SparseCategoricalCrossentropy(from_logits=True))
model.fit(train_images, train_labels, batch_size=24, epochs=1, verbose=2)

tape_model = tf.keras.Sequential([tf.keras.layers.Dense(3, input_shape=(8,))])
optimizer = tf.keras.optimizers.SGD(learning_rate=0.05)
loss_fn = tf.keras.losses.SparseCategoricalCrossentropy(from_logits=True)
batch_size = 24
for idx in range(0, train_images.shape[0], batch_size):
    images, labels = train_images[idx:idx + batch_size], train_labels[idx:idx + batch_size]
    with tf.GradientTape() as tape:
        loss_value = loss_fn(labels, tape_model(images, training=True))
    grads = tape.gradient(loss_value, tape_model.trainable_variables)
    optimizer.apply_gradients(zip(grads, tape_model.trainable_variables))
print("loss", float(loss_value))
