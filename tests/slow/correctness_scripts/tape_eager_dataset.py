# tfdist-test: disjoint=yes
"""TF2 GradientTape loop, eager (no tf.function), over a shuffled
from_tensor_slices dataset; label = a fixed function of the sample."""
import numpy as np
import tensorflow as tf

N, BATCH, EPOCHS = 384, 32, 2


def label_of(sample):
    return np.int64(int(sample[0] * 1000) % 10)


tf.keras.utils.set_random_seed(3)
rng = np.random.RandomState(0)
features = rng.rand(N, 8).astype(np.float32)
classes = np.array([label_of(s) for s in features], dtype=np.int64)

dataset = tf.data.Dataset.from_tensor_slices((features, classes)).shuffle(N, seed=5).batch(BATCH)
model = tf.keras.Sequential([tf.keras.layers.Dense(16, activation="relu", input_shape=(8,)),
                             tf.keras.layers.Dense(10)])
optimizer = tf.keras.optimizers.SGD(learning_rate=0.05)
loss_fn = tf.keras.losses.SparseCategoricalCrossentropy(from_logits=True)

for epoch in range(EPOCHS):
    for xb, yb in dataset:
        with tf.GradientTape() as tape:
            loss = loss_fn(yb, model(xb, training=True))
        grads = tape.gradient(loss, model.trainable_variables)
        optimizer.apply_gradients(zip(grads, model.trainable_variables))
    print(f"epoch {epoch} loss {float(loss):.4f}")
