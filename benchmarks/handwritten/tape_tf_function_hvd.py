"""Hand-written Horovod version of examples/tape_tf_function.py.

Converted by hand following Horovod's TensorFlow 2 documentation
(docs/tensorflow.rst, examples/tensorflow2/tensorflow2_mnist.py):
hvd.init(), one GPU per process, learning rate scaled by hvd.size(),
hvd.DistributedGradientTape, broadcast of the model and optimizer variables
after the first gradient step (`first_batch` argument of the tf.function),
sharded input, and checkpoints / summaries / console output on rank 0 only.

Run with e.g.:  horovodrun -np 2 -H localhost:2 --gloo python tape_tf_function_hvd.py
"""
import os

import numpy as np
import tensorflow as tf
import horovod.tensorflow as hvd

NUM_SAMPLES = 1003
NUM_FEATURES = 10
NUM_CLASSES = 4
BATCH_SIZE = 32
EPOCHS = int(os.environ.get("TFDIST_BENCH_EPOCHS", "3"))
LOG_EVERY = 10

# Horovod: initialize Horovod.
hvd.init()

# Horovod: pin GPU to be used to process local rank (one GPU per process).
gpus = tf.config.experimental.list_physical_devices("GPU")
for gpu in gpus:
    tf.config.experimental.set_memory_growth(gpu, True)
if gpus:
    tf.config.experimental.set_visible_devices(gpus[hvd.local_rank()], "GPU")

tf.keras.utils.set_random_seed(1234)
rng = np.random.default_rng(0)

# --- data (identical on every rank) ----------------------------------------
features = rng.normal(size=(NUM_SAMPLES, NUM_FEATURES)).astype(np.float32)
projection = rng.normal(size=(NUM_FEATURES, 2)).astype(np.float32)
z = features @ projection
labels = ((z[:, 0] > 0).astype(np.int64) * 2 + (z[:, 1] > 0).astype(np.int64))

dataset = tf.data.Dataset.from_tensor_slices((features, labels))
# Horovod: each worker reads its own shard.
dataset = dataset.shard(hvd.size(), hvd.rank())
dataset = dataset.shuffle(NUM_SAMPLES, seed=0).batch(BATCH_SIZE)

# --- model -----------------------------------------------------------------
model = tf.keras.Sequential([
    tf.keras.layers.Dense(64, activation="relu"),
    tf.keras.layers.Dense(64, activation="relu"),
    tf.keras.layers.Dense(NUM_CLASSES),
])
loss_fn = tf.keras.losses.SparseCategoricalCrossentropy(from_logits=True)
# Horovod: adjust learning rate based on number of workers.
optimizer = tf.keras.optimizers.Adam(1e-3 * hvd.size())

checkpoint = tf.train.Checkpoint(model=model, optimizer=optimizer)
# Horovod: only worker 0 writes checkpoints and summaries.
if hvd.rank() == 0:
    manager = tf.train.CheckpointManager(checkpoint, "./checkpoints", max_to_keep=3)
    summary_writer = tf.summary.create_file_writer("./logs")
else:
    manager = None
    summary_writer = tf.summary.create_noop_writer()


@tf.function
def train_step(x, y, first_batch):
    with tf.GradientTape() as tape:
        logits = model(x, training=True)
        loss = loss_fn(y, logits)

    # Horovod: add Horovod Distributed GradientTape.
    tape = hvd.DistributedGradientTape(tape)

    grads = tape.gradient(loss, model.trainable_variables)
    optimizer.apply_gradients(zip(grads, model.trainable_variables))

    # Horovod: broadcast initial variable states from rank 0 to all other processes.
    # Done after the first gradient step so the optimizer's slots exist.
    # (Keras 2.15's optimizer.variables is a property returning a callable list,
    # so both `optimizer.variables` and the documented `optimizer.variables()` work.)
    if first_batch:
        hvd.broadcast_variables(model.variables, root_rank=0)
        hvd.broadcast_variables(optimizer.variables, root_rank=0)
    return loss


global_step = 0
for epoch in range(EPOCHS):
    epoch_loss = tf.keras.metrics.Mean()
    for step, (x, y) in enumerate(dataset):
        loss = train_step(x, y, global_step == 0)
        epoch_loss.update_state(loss)
        if step % LOG_EVERY == 0 and hvd.rank() == 0:
            print(f"epoch {epoch + 1} step {step} loss {loss.numpy():.4f}")
        global_step += 1

    # Horovod: average the epoch loss over workers for reporting.
    mean_loss = hvd.allreduce(epoch_loss.result(), name="epoch_loss")
    with summary_writer.as_default():
        tf.summary.scalar("train_loss", mean_loss, step=epoch)
    if hvd.rank() == 0:
        save_path = manager.save()
        print(f"epoch {epoch + 1} mean loss {mean_loss.numpy():.4f}, saved {save_path}")

if hvd.rank() == 0:
    print(f"final loss {mean_loss.numpy():.4f}")
