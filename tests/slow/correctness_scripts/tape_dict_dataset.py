# tfdist-test: ranks=2 disjoint=yes
"""TF2 GradientTape loop over a dataset of dicts ({"features", "label"}).
tf.data hands dict elements back with sorted keys: "features" is the sample."""
import numpy as np
import tensorflow as tf

N, BATCH, EPOCHS = 256, 32, 2


def label_of(sample):
    return np.int64(int(sample[1] * 1000) % 4)


tf.keras.utils.set_random_seed(5)
rng = np.random.RandomState(2)
feats = rng.rand(N, 5).astype(np.float32)
labs = np.array([label_of(f) for f in feats], dtype=np.int64)

ds = tf.data.Dataset.from_tensor_slices({"features": feats, "label": labs}).batch(BATCH)
model = tf.keras.Sequential([tf.keras.layers.Dense(4, input_shape=(5,))])
optimizer = tf.keras.optimizers.SGD(0.1)
xent = tf.keras.losses.SparseCategoricalCrossentropy(from_logits=True)

for epoch in range(EPOCHS):
    for batch in ds:
        with tf.GradientTape() as tape:
            loss = xent(batch["label"], model(batch["features"]))
        grads = tape.gradient(loss, model.trainable_variables)
        optimizer.apply_gradients(zip(grads, model.trainable_variables))
    print(f"epoch {epoch} loss {float(loss):.4f}")
