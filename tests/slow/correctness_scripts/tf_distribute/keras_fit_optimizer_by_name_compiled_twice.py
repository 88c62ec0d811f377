# tfdist-test: ranks=2 disjoint=yes
"""An optimizer made from its name and config (tfdist cannot see its rate:
it is scaled when compile() runs), compiled again for a second fit after the
first layer is frozen: the rate must be scaled once, not twice.

tf.distribute only: Horovod's DistributedOptimizer rebuilds the optimizer
from its config at every compile(), so the probe's step count (the most any
one optimizer stepped) would see two optimizers of 8 steps each where the
original has one of 16 + 16; keras_fit_optimizer_by_name runs there."""
import numpy as np
import tensorflow as tf

N = 512
OPTIMIZER = {"class_name": "SGD", "config": {"learning_rate": 0.05, "momentum": 0.5}}


def label_of(sample):
    return np.int64(int(sample[1] * 1000) % 2)


tf.keras.utils.set_random_seed(11)
rng = np.random.RandomState(5)
x_train = rng.rand(N, 6).astype(np.float32)
y_train = np.array([label_of(s) for s in x_train], dtype=np.int64)

optimizer = tf.keras.optimizers.get(OPTIMIZER)
model = tf.keras.Sequential([
    tf.keras.layers.Dense(12, activation="relu", input_shape=(6,)),
    tf.keras.layers.Dense(2),
])
model.compile(optimizer=optimizer, loss=tf.keras.losses.SparseCategoricalCrossentropy(from_logits=True))
model.fit(x_train, y_train, batch_size=32, epochs=1, verbose=2)

model.layers[0].trainable = False
model.compile(optimizer=optimizer, loss=tf.keras.losses.SparseCategoricalCrossentropy(from_logits=True))
model.fit(x_train, y_train, batch_size=32, epochs=1, verbose=2)
