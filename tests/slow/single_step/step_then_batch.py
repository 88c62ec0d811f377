"""A tf.function training step called once per batch of array slices, the
batch read again after it (its shape printed every few steps)."""
import numpy as np
import tensorflow as tf

rng = np.random.RandomState(0)
train_x = rng.rand(640, 8).astype("float32")
train_y = (train_x[:, :3].sum(axis=1) > 1.5).astype("int64")
tf.random.set_seed(2)
model = tf.keras.Sequential([tf.keras.Input((8,)), tf.keras.layers.Dense(16, activation="relu"),
                             tf.keras.layers.Dense(2)])
optimizer = tf.keras.optimizers.Adam(1e-2)


@tf.function
def train_step(inputs, labels):
    with tf.GradientTape() as tape:
        logits = model(inputs, training=True)
        loss_value = tf.reduce_mean(
            tf.keras.losses.sparse_categorical_crossentropy(labels, logits, from_logits=True))
    gradients = tape.gradient(loss_value, model.trainable_variables)
    optimizer.apply_gradients(zip(gradients, model.trainable_variables))
    return loss_value


batch_size = 32
for epoch in range(3):
    for t in range(int(train_x.shape[0] / batch_size)):
        features, labels = train_x[t * batch_size:(t + 1) * batch_size], train_y[t * batch_size:(t + 1) * batch_size]
        loss_value = train_step(features, labels)
        if t % 5 == 0:
            print(epoch, t, float(loss_value), tuple(features.shape))
