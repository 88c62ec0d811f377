"""Hand-written Horovod TF2 GradientTape script (custom loop, tf.function,
legacy Keras optimizer, tf.train.CheckpointManager, tf.summary).

--break shard   every rank iterates over the whole dataset (not sharded), so
                each rank takes as many steps as the single-process script
"""
import argparse

import numpy as np
import tensorflow as tf
import horovod.tensorflow as hvd

parser = argparse.ArgumentParser()
parser.add_argument("--break", dest="broken", choices=["shard"])
parser.add_argument("--epochs", type=int, default=2)
args = parser.parse_args()

hvd.init()
tf.keras.utils.set_random_seed(7)

rng = np.random.RandomState(0)
x = rng.randn(192, 6).astype("float32")
y = (x @ rng.randn(6, 1)).astype("float32")
ds = tf.data.Dataset.from_tensor_slices((x, y))
if args.broken != "shard":
    ds = ds.shard(hvd.size(), hvd.rank())
ds = ds.batch(12)

model = tf.keras.Sequential([tf.keras.layers.Dense(8, activation="tanh", input_shape=(6,)),
                             tf.keras.layers.Dense(1)])
opt = tf.keras.optimizers.legacy.Adam(0.01 * hvd.size())
loss_fn = tf.keras.losses.MeanSquaredError()


@tf.function
def train_step(xb, yb, first_batch):
    with tf.GradientTape() as tape:
        loss = loss_fn(yb, model(xb, training=True))
    tape = hvd.DistributedGradientTape(tape)
    grads = tape.gradient(loss, model.trainable_variables)
    opt.apply_gradients(zip(grads, model.trainable_variables))
    if first_batch:
        hvd.broadcast_variables(model.variables, root_rank=0)
        hvd.broadcast_variables(opt.variables(), root_rank=0)
    return loss


writer = tf.summary.create_file_writer("logs") if hvd.rank() == 0 else tf.summary.create_noop_writer()
ckpt = tf.train.Checkpoint(model=model, optimizer=opt)
manager = tf.train.CheckpointManager(ckpt, "ckpt", max_to_keep=2)
step = 0
for epoch in range(args.epochs):
    for xb, yb in ds:
        loss = train_step(xb, yb, step == 0)
        step += 1
    with writer.as_default():
        tf.summary.scalar("loss", loss, step=epoch)
    if hvd.rank() == 0:
        manager.save()
        print(f"epoch {epoch} loss {float(loss):.4f} steps {step}")
