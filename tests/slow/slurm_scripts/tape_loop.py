"""Tiny single-process GradientTape script (converted, then run as a Slurm
job): 64 samples, batch 8, 1 epoch = 8 optimizer steps on one process."""
import numpy as np
import tensorflow as tf

tf.keras.utils.set_random_seed(1234)
rng = np.random.RandomState(0)
x = rng.randn(64, 4).astype("float32")
y = (x @ rng.randn(4, 1) + 0.1).astype("float32")
dataset = tf.data.Dataset.from_tensor_slices((x, y)).batch(8)

model = tf.keras.Sequential([tf.keras.layers.Dense(8, activation="relu"), tf.keras.layers.Dense(1)])
optimizer = tf.keras.optimizers.SGD(learning_rate=0.01)


@tf.function
def train_step(xb, yb):
    with tf.GradientTape() as tape:
        loss = tf.reduce_mean(tf.square(model(xb, training=True) - yb))
    grads = tape.gradient(loss, model.trainable_variables)
    optimizer.apply_gradients(zip(grads, model.trainable_variables))
    return loss


for epoch in range(1):
    for xb, yb in dataset:
        loss = train_step(xb, yb)
    print("epoch", epoch, "loss", float(loss))
checkpoint = tf.train.Checkpoint(model=model, optimizer=optimizer)
checkpoint.write("ckpt/final")
