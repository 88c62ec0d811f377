"""The "Writing a training loop from scratch" guide's shape: a functional
model, an optimizer and a loss function, a train_step that returns the
loss value, an accuracy metric updated in the step and read/reset at the
end of every epoch, a validation loop, progress printed every few steps."""
import time

import numpy as np
import tensorflow as tf
from tensorflow import keras

rng = np.random.default_rng(21)
x_train = rng.normal(size=(1024, 20)).astype("float32")
y_train = (x_train[:, :5].sum(axis=1) > 0).astype("int64") + (x_train[:, 5] > 1).astype("int64")
x_val, y_val = x_train[-128:], y_train[-128:]
batch_size = 32
train_dataset = tf.data.Dataset.from_tensor_slices((x_train, y_train)).shuffle(buffer_size=1024, seed=1).batch(batch_size)
val_dataset = tf.data.Dataset.from_tensor_slices((x_val, y_val)).batch(batch_size)

inputs = keras.Input(shape=(20,), name="digits")
x1 = keras.layers.Dense(32, activation="relu")(inputs)
x2 = keras.layers.Dense(32, activation="relu")(x1)
outputs = keras.layers.Dense(3, name="predictions")(x2)
model = keras.Model(inputs=inputs, outputs=outputs)

optimizer = keras.optimizers.SGD(learning_rate=1e-2)
loss_fn = keras.losses.SparseCategoricalCrossentropy(from_logits=True)
train_acc_metric = keras.metrics.SparseCategoricalAccuracy()
val_acc_metric = keras.metrics.SparseCategoricalAccuracy()


@tf.function
def train_step(x, y):
    with tf.GradientTape() as tape:
        logits = model(x, training=True)
        loss_value = loss_fn(y, logits)
    grads = tape.gradient(loss_value, model.trainable_weights)
    optimizer.apply_gradients(zip(grads, model.trainable_weights))
    train_acc_metric.update_state(y, logits)
    return loss_value


@tf.function
def test_step(x, y):
    val_logits = model(x, training=False)
    val_acc_metric.update_state(y, val_logits)


epochs = 3
for epoch in range(epochs):
    print(f"\nStart of epoch {epoch}")
    start_time = time.time()
    for step, (x_batch_train, y_batch_train) in enumerate(train_dataset):
        loss_value = train_step(x_batch_train, y_batch_train)
        if step % 10 == 0:
            print(f"Training loss (for 1 batch) at step {step}: {float(loss_value):.4f}")
    train_acc = train_acc_metric.result()
    print(f"Training acc over epoch: {float(train_acc):.4f}")
    train_acc_metric.reset_state()
    for x_batch_val, y_batch_val in val_dataset:
        test_step(x_batch_val, y_batch_val)
    val_acc = val_acc_metric.result()
    val_acc_metric.reset_state()
    print(f"Validation acc: {float(val_acc):.4f}")
    print(f"Time taken: {time.time() - start_time:.2f}s")
