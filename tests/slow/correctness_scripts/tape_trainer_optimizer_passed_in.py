# tfdist-test: disjoint=yes coverage=0.9
"""A Trainer class whose optimizer is built by the caller and passed in; the
dataset is passed to its fit() method."""
import numpy as np
import tensorflow as tf


def label_of(sample):
    return np.int64(int(sample[0] * 1000) % 4)


class Trainer:
    def __init__(self, model, optimizer):
        self.model = model
        self.optimizer = optimizer
        self.loss_fn = tf.keras.losses.SparseCategoricalCrossentropy(from_logits=True)

    @tf.function
    def train_step(self, x, y):
        with tf.GradientTape() as tape:
            loss = self.loss_fn(y, self.model(x, training=True))
        grads = tape.gradient(loss, self.model.trainable_variables)
        self.optimizer.apply_gradients(zip(grads, self.model.trainable_variables))
        return loss

    def fit(self, dataset, epochs):
        for epoch in range(epochs):
            for x, y in dataset:
                loss = self.train_step(x, y)
            print("epoch", epoch, "loss", float(loss))


def build_dataset():
    rng = np.random.RandomState(0)
    x = rng.rand(360, 10).astype("float32")
    y = (x[:, 0] * 1000).astype("int64") % 4
    return tf.data.Dataset.from_tensor_slices((x, y)).shuffle(360, seed=6).batch(30)


tf.keras.utils.set_random_seed(14)
model = tf.keras.Sequential([tf.keras.layers.Dense(16, activation="relu", input_shape=(10,)),
                             tf.keras.layers.Dense(4)])
trainer = Trainer(model, tf.keras.optimizers.RMSprop(learning_rate=0.002))
trainer.fit(build_dataset(), epochs=2)
