# tfdist-test: ranks=2 disjoint=yes coverage=0.9 timeout=240
"""A GradientTape loop over an endless generator numbered by enumerate,
breaking after a fixed number of steps (``if step >= STEPS: break``).
Horovod: each rank keeps every N-th batch of the stream; numbered as the
stream numbers them, rank 0's positions ran 1, 3, 5... and rank 1's 2, 4,
6..., so with STEPS = 10 rank 0 broke after 6 steps and rank 1 after 5,
and rank 0's last allreduce stopped the run ("Horovod has been shut down").
The share is now numbered on each rank and each breaks after STEPS // N
steps. tf.distribute: enumerate numbers groups of N batches (one step
each), and the cap was left whole: N times the original's batches."""
import numpy as np
import tensorflow as tf

STEPS = 10


def label_of(sample):
    return np.int64(int(sample[2] * 1000) % 3)


def batches(x, y, size):
    while True:
        for start in range(0, len(x) - size + 1, size):
            yield x[start:start + size], y[start:start + size]


tf.keras.utils.set_random_seed(5)
rng = np.random.RandomState(9)
images = rng.rand(256, 5).astype("float32")
labels = np.array([label_of(s) for s in images], dtype=np.int64)
model = tf.keras.Sequential([tf.keras.layers.Dense(8, activation="relu"), tf.keras.layers.Dense(3)])
optimizer = tf.keras.optimizers.SGD(learning_rate=0.05)
loss_fn = tf.keras.losses.SparseCategoricalCrossentropy(from_logits=True)

for epoch in range(2):
    for step, (x, y) in enumerate(batches(images, labels, 16), start=1):
        with tf.GradientTape() as tape:
            loss_value = loss_fn(y, model(x, training=True))
        grads = tape.gradient(loss_value, model.trainable_variables)
        optimizer.apply_gradients(zip(grads, model.trainable_variables))
        if step >= STEPS:
            break
    print(epoch, float(loss_value))
