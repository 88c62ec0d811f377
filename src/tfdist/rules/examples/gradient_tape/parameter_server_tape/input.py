"""A tf.function training step of the batch, called in a loop over a tf.data dataset."""
import numpy as np
import tensorflow as tf

rng = np.random.RandomState(0)
x = rng.randn(1024, 8).astype("float32")
y = (x @ rng.randn(8, 1) + 0.1 * rng.randn(1024, 1)).astype("float32")
dataset = tf.data.Dataset.from_tensor_slices((x, y)).shuffle(1024).batch(32)
model = tf.keras.Sequential([tf.keras.Input((8,)), tf.keras.layers.Dense(16, activation="relu"), tf.keras.layers.Dense(1)])
optimizer = tf.keras.optimizers.Adam(0.01)
loss_fn = tf.keras.losses.MeanSquaredError()


@tf.function
def train_step(xb, yb):
    with tf.GradientTape() as tape:
        loss = loss_fn(yb, model(xb, training=True))
    grads = tape.gradient(loss, model.trainable_variables)
    optimizer.apply_gradients(zip(grads, model.trainable_variables))
    return loss


for epoch in range(4):
    total, steps = 0.0, 0
    for xb, yb in dataset:
        loss = train_step(xb, yb)
        total += float(loss)
        steps += 1
    print(f"epoch {epoch}: loss {total / steps:.4f}")
model.save_weights("final.weights.h5")
