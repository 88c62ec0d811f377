"""A tape loop whose samples a helper module writes each epoch (pictures.save_samples)."""
import numpy as np
import tensorflow as tf

from pictures import save_samples

data = np.random.RandomState(0).rand(256, 8).astype("float32")
dataset = tf.data.Dataset.from_tensor_slices(data).batch(32)
model = tf.keras.Sequential([tf.keras.Input((4,)), tf.keras.layers.Dense(8)])
optimizer = tf.keras.optimizers.SGD(0.05)
noise = tf.random.stateless_normal([4, 4], seed=[1, 2])


@tf.function
def train_step(batch):
    with tf.GradientTape() as tape:
        loss = tf.reduce_mean(tf.square(model(batch[:, :4], training=True) - batch))
    grads = tape.gradient(loss, model.trainable_variables)
    optimizer.apply_gradients(zip(grads, model.trainable_variables))
    return loss


for epoch in range(2):
    for batch in dataset:
        train_step(batch)
    save_samples(model, epoch, noise)
