# tfdist-test: disjoint=yes
"""TF2 GradientTape loop with a @tf.function step, enumerate() over a
dataset that is mapped and batched after shuffling; float targets."""
import numpy as np
import tensorflow as tf

N, BATCH, EPOCHS = 512, 64, 2


def label_of(sample):
    return np.float32(sample[0] * 2.0 - sample[3])


tf.keras.utils.set_random_seed(4)
rng = np.random.RandomState(1)
inputs = rng.rand(N, 6).astype(np.float32)
targets = (inputs[:, 0] * 2.0 - inputs[:, 3]).astype(np.float32)

train_ds = (tf.data.Dataset.from_tensor_slices((inputs, targets))
            .shuffle(256, seed=9)
            .map(lambda a, b: (a, b))
            .batch(BATCH))
model = tf.keras.Sequential([tf.keras.layers.Dense(8, activation="tanh", input_shape=(6,)),
                             tf.keras.layers.Dense(1)])
opt = tf.keras.optimizers.Adam(learning_rate=0.01)


@tf.function
def train_step(xb, yb):
    with tf.GradientTape() as tape:
        pred = tf.squeeze(model(xb, training=True), axis=1)
        loss = tf.reduce_mean(tf.square(pred - yb))
    grads = tape.gradient(loss, model.trainable_variables)
    opt.apply_gradients(zip(grads, model.trainable_variables))
    return loss


for epoch in range(EPOCHS):
    for step, (xb, yb) in enumerate(train_ds):
        loss = train_step(xb, yb)
    print(f"epoch {epoch} loss {float(loss):.4f}")
