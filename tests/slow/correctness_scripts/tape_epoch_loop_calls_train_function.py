# tfdist-test: ranks=2 disjoint=yes coverage=0.9
"""A module-level epoch loop calling train(epoch, model, optimizer), whose own loop
reads a dataset a helper builds and calls a tf.function step taking the model and
optimizer as parameters. tf.distribute: the step loop is the one in train(), not
the epoch loop that reaches it through the call (refused before: "no statements
cutting the batch before the training step")."""
import numpy as np
import tensorflow as tf
from tensorflow import keras
from tensorflow.keras import layers, optimizers


def label_of(sample):
    return np.int64(sample.sum() > 4.0)


def make_dataset():
    x = np.random.RandomState(0).rand(1024, 8).astype("float32")
    y = np.array([label_of(s) for s in x], dtype="int64")
    ds = tf.data.Dataset.from_tensor_slices((x, y))
    ds = ds.shuffle(1024).batch(32)
    return ds


model = keras.Sequential([layers.Dense(16, activation="relu"), layers.Dense(2)])
optimizer = optimizers.Adam()


@tf.function
def compute_loss(logits, labels):
    return tf.reduce_mean(tf.nn.sparse_softmax_cross_entropy_with_logits(logits=logits, labels=labels))


@tf.function
def train_one_step(model, optimizer, x, y):
    with tf.GradientTape() as tape:
        logits = model(x)
        loss = compute_loss(logits, y)
    grads = tape.gradient(loss, model.trainable_variables)
    optimizer.apply_gradients(zip(grads, model.trainable_variables))
    return loss


def train(epoch, model, optimizer):
    train_ds = make_dataset()
    loss = 0.0
    for step, (x, y) in enumerate(train_ds):
        loss = train_one_step(model, optimizer, x, y)
        if step % 10 == 0:
            print("epoch", epoch, "loss", float(loss))
    return loss


for epoch in range(3):
    loss = train(epoch, model, optimizer)
print("final", float(loss))
