"""Custom TF2 training loop with tf.GradientTape inside a tf.function.

Trains a small Keras MLP on a synthetic 4-class problem (class = quadrant
of a fixed random 2-D projection of the inputs). The loop is written by
hand: a compiled `train_step`, per-step loss printing, a checkpoint saved
every epoch through tf.train.CheckpointManager, and a TensorBoard scalar.

Outputs: ./checkpoints/ (checkpoints), ./logs/ (TensorBoard summaries).
"""
import os

import numpy as np
import tensorflow as tf

NUM_SAMPLES = 1003
NUM_FEATURES = 10
NUM_CLASSES = 4
BATCH_SIZE = 32
EPOCHS = int(os.environ.get("TFDIST_BENCH_EPOCHS", "3"))
LOG_EVERY = 10

tf.keras.utils.set_random_seed(1234)
rng = np.random.default_rng(0)

# --- data ------------------------------------------------------------------
features = rng.normal(size=(NUM_SAMPLES, NUM_FEATURES)).astype(np.float32)
projection = rng.normal(size=(NUM_FEATURES, 2)).astype(np.float32)
z = features @ projection
labels = ((z[:, 0] > 0).astype(np.int64) * 2 + (z[:, 1] > 0).astype(np.int64))

dataset = tf.data.Dataset.from_tensor_slices((features, labels))
dataset = dataset.shuffle(NUM_SAMPLES, seed=0).batch(BATCH_SIZE)

# --- model -----------------------------------------------------------------
model = tf.keras.Sequential([
    tf.keras.layers.Dense(64, activation="relu"),
    tf.keras.layers.Dense(64, activation="relu"),
    tf.keras.layers.Dense(NUM_CLASSES),
])
loss_fn = tf.keras.losses.SparseCategoricalCrossentropy(from_logits=True)
optimizer = tf.keras.optimizers.Adam(1e-3)

checkpoint = tf.train.Checkpoint(model=model, optimizer=optimizer)
manager = tf.train.CheckpointManager(checkpoint, "./checkpoints", max_to_keep=3)
summary_writer = tf.summary.create_file_writer("./logs")


@tf.function
def train_step(x, y):
    with tf.GradientTape() as tape:
        logits = model(x, training=True)
        loss = loss_fn(y, logits)
    grads = tape.gradient(loss, model.trainable_variables)
    optimizer.apply_gradients(zip(grads, model.trainable_variables))
    return loss


global_step = 0
for epoch in range(EPOCHS):
    epoch_loss = tf.keras.metrics.Mean()
    for step, (x, y) in enumerate(dataset):
        loss = train_step(x, y)
        epoch_loss.update_state(loss)
        if step % LOG_EVERY == 0:
            print(f"epoch {epoch + 1} step {step} loss {loss.numpy():.4f}")
        global_step += 1

    with summary_writer.as_default():
        tf.summary.scalar("train_loss", epoch_loss.result(), step=epoch)
    save_path = manager.save()
    print(f"epoch {epoch + 1} mean loss {epoch_loss.result().numpy():.4f}, saved {save_path}")

print(f"final loss {epoch_loss.result().numpy():.4f}")
