"""A subclassed model made, then called once on its own (a sample before training), then trained in
a tape loop: the model makes its variables at that first call."""
import numpy as np
import tensorflow as tf
from tensorflow import keras


class Generator(keras.Model):
    def __init__(self, size=4):
        super().__init__()
        self.hidden = keras.layers.Dense(units=16)
        self.out = keras.layers.Dense(units=8)

    def call(self, x):
        return self.out(tf.nn.relu(self.hidden(x)))


generator = Generator()

fake = generator(np.random.uniform(-1, 1, size=(1, 4)))
print(fake.shape)

data = np.random.RandomState(0).rand(256, 8).astype("float32")
dataset = tf.data.Dataset.from_tensor_slices(data).batch(32)
optimizer = keras.optimizers.RMSprop()


@tf.function
def step(batch):
    with tf.GradientTape() as tape:
        loss = tf.reduce_mean(tf.square(generator(tf.random.normal([tf.shape(batch)[0], 4])) - batch))
    grads = tape.gradient(loss, generator.trainable_variables)
    optimizer.apply_gradients(zip(grads, generator.trainable_variables))


for epoch in range(3):
    for batch in dataset:
        step(batch)
