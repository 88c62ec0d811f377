# tfdist-test: ranks=2 disjoint=yes
"""An optimizer made from its name and config: tfdist cannot see its
learning rate, so it is scaled when compile() runs (the learning-rate check
of the harness reads the rate the first step trains with)."""
import numpy as np
import tensorflow as tf

N = 480
OPTIMIZER = {"class_name": "Adam", "config": {"learning_rate": 0.002}}


def label_of(sample):
    return np.int64(int(sample[0] * 1000) % 3)


tf.keras.utils.set_random_seed(4)
rng = np.random.RandomState(9)
x_train = rng.rand(N, 5).astype(np.float32)
y_train = np.array([label_of(s) for s in x_train], dtype=np.int64)

model = tf.keras.Sequential([
    tf.keras.layers.Dense(16, activation="relu", input_shape=(5,)),
    tf.keras.layers.Dense(3),
])
model.compile(optimizer=tf.keras.optimizers.get(OPTIMIZER),
              loss=tf.keras.losses.SparseCategoricalCrossentropy(from_logits=True))
model.fit(x_train, y_train, batch_size=24, epochs=2, verbose=2)
