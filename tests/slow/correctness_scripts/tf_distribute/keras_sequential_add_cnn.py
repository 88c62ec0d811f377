# tfdist-test: ranks=2 disjoint=yes timeout=600
"""A small CNN built layer by layer with Sequential().add() and trained by
fit(): under tf.distribute every add() creates variables, so all of them
must run in strategy.scope() (outside it fit() stops with "Variable ... was
not created in the distribution strategy scope")."""
import numpy as np
import tensorflow as tf
from tensorflow.keras import layers, models

N, BATCH = 256, 16


def label_of(sample):
    return np.int64(sample.mean() > 0.5)


tf.keras.utils.set_random_seed(3)
rng = np.random.RandomState(5)
images = rng.rand(N, 16, 16, 1).astype(np.float32)
labels = (images.mean(axis=(1, 2, 3)) > 0.5).astype(np.int64)

train = tf.data.Dataset.from_tensor_slices((images, labels)).shuffle(N, seed=1).batch(BATCH)

model = models.Sequential()
model.add(layers.Conv2D(4, (3, 3), activation="relu", input_shape=(16, 16, 1)))
model.add(layers.MaxPooling2D((2, 2)))
model.add(layers.Conv2D(8, (3, 3), activation="relu"))
model.add(layers.Flatten())
model.add(layers.Dense(2))
model.summary()

model.compile(optimizer=tf.keras.optimizers.SGD(0.05),
              loss=tf.keras.losses.SparseCategoricalCrossentropy(from_logits=True),
              metrics=["accuracy"])
model.fit(train, epochs=2, verbose=2)
