"""A classifier whose training step reaches its loop as a parameter: main()
hands train_step and an iterator of the dataset to run_epoch(), which also
runs the validation step over another dataset's iterator."""
import numpy as np
import tensorflow as tf

STEPS_PER_EPOCH = 20
EPOCHS = 3


def make_data(n, seed):
    rng = np.random.RandomState(seed)
    x = rng.normal(size=(n, 10)).astype("float32")
    w = np.linspace(-1.0, 1.0, 10).astype("float32")
    y = (x @ w > 0).astype("float32")[:, None]
    return x, y


x_train, y_train = make_data(640, 0)
x_val, y_val = make_data(128, 1)
train_ds = tf.data.Dataset.from_tensor_slices((x_train, y_train)).shuffle(640, seed=5).repeat().batch(16)
val_ds = tf.data.Dataset.from_tensor_slices((x_val, y_val)).batch(32)

tf.random.set_seed(3)
model = tf.keras.Sequential([tf.keras.Input((10,)), tf.keras.layers.Dense(16, activation="relu"),
                             tf.keras.layers.Dense(1)])
optimizer = tf.keras.optimizers.SGD(learning_rate=0.05)
bce = tf.keras.losses.BinaryCrossentropy(from_logits=True)


@tf.function
def train_step(batch):
    features, labels = batch
    with tf.GradientTape() as tape:
        loss = bce(labels, model(features, training=True))
    gradients = tape.gradient(loss, model.trainable_variables)
    optimizer.apply_gradients(zip(gradients, model.trainable_variables))
    return loss


@tf.function
def val_step(batch):
    features, labels = batch
    return bce(labels, model(features, training=False))


def run_epoch(step_fn, dataset_iter, steps, accumulator):
    for _ in range(steps):
        accumulator.update_state(step_fn(next(dataset_iter)))
    result = float(accumulator.result())
    accumulator.reset_state()
    return result


def main():
    accumulator = tf.keras.metrics.Mean()
    train_iter = train_ds.__iter__()
    for epoch in range(EPOCHS):
        train_loss = run_epoch(train_step, train_iter, STEPS_PER_EPOCH, accumulator)
        val_loss = run_epoch(val_step, val_ds.__iter__(), 4, accumulator)
        print(f"epoch {epoch}: loss {train_loss:.4f} val_loss {val_loss:.4f}")


main()
