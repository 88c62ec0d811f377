"""The whole epoch traced by a tf.function (TensorFlow's AutoGraph tutorial
shape, found in stop 45's runtime sample): a plain step function called in
a loop over a dataset inside ``@tf.function def train(...)``."""
import numpy as np
import tensorflow as tf

x = np.random.RandomState(0).rand(512, 8).astype("float32")
y = (x.sum(axis=1) > 4).astype("int64")
model = tf.keras.Sequential([tf.keras.layers.Dense(16, activation="relu", input_shape=(8,)), tf.keras.layers.Dense(2)])
optimizer = tf.keras.optimizers.Adam(0.01)
compute_loss = tf.keras.losses.SparseCategoricalCrossentropy(from_logits=True)


def train_one_step(model, optimizer, x, y):
    with tf.GradientTape() as tape:
        logits = model(x)
        loss = compute_loss(y, logits)
    grads = tape.gradient(loss, model.trainable_variables)
    optimizer.apply_gradients(zip(grads, model.trainable_variables))
    return loss


@tf.function
def train(model, optimizer):
    ds = tf.data.Dataset.from_tensor_slices((x, y)).batch(32)
    step = 0
    loss = 0.0
    for xb, yb in ds:
        step += 1
        loss = train_one_step(model, optimizer, xb, yb)
        if tf.equal(step % 10, 0):
            tf.print("step", step, "loss", loss)
    return step, loss


for epoch in range(3):
    step, loss = train(model, optimizer)
    print("epoch", epoch, "loss", float(loss))
