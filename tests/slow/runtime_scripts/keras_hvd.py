"""Hand-written Horovod Keras script (tiny model, synthetic data).

--break selects a deliberately broken conversion:
  broadcast   no BroadcastGlobalVariablesCallback and a different seed per
              rank: the ranks start (and therefore end) with different weights
  checkpoint  every rank writes checkpoints and TensorBoard logs (each rank its
              own checkpoint file: two ranks writing the same HDF5 file
              crash on its file lock, which would hide the writer check)
"""
import argparse

import numpy as np
import tensorflow as tf
import horovod.tensorflow.keras as hvd

parser = argparse.ArgumentParser()
parser.add_argument("--break", dest="broken", choices=["broadcast", "checkpoint"])
parser.add_argument("--epochs", type=int, default=2)
args = parser.parse_args()

hvd.init()
seed = 1234 + (1000 * hvd.rank() if args.broken == "broadcast" else 0)
tf.keras.utils.set_random_seed(seed)

rng = np.random.RandomState(0)                  # same data on every rank
x = rng.randn(256, 8).astype("float32")
y = (x @ rng.randn(8, 1) + 0.1).astype("float32")
ds = (tf.data.Dataset.from_tensor_slices((x, y))
      .shard(hvd.size(), hvd.rank())
      .batch(16))

model = tf.keras.Sequential([
    tf.keras.layers.Dense(16, activation="relu", input_shape=(8,)),
    tf.keras.layers.Dense(1),
])
opt = tf.keras.optimizers.SGD(learning_rate=0.01 * hvd.size(), momentum=0.9)
model.compile(loss="mse", optimizer=hvd.DistributedOptimizer(opt))

callbacks = [hvd.callbacks.MetricAverageCallback()]
if args.broken != "broadcast":
    callbacks.insert(0, hvd.callbacks.BroadcastGlobalVariablesCallback(0))
if hvd.rank() == 0 or args.broken == "checkpoint":
    name = "weights.{epoch}.h5" if args.broken != "checkpoint" else f"rank{hvd.rank()}-weights.{{epoch}}.h5"
    callbacks.append(tf.keras.callbacks.ModelCheckpoint("ckpt/" + name, save_weights_only=True))
    callbacks.append(tf.keras.callbacks.TensorBoard("logs"))

model.fit(ds, epochs=args.epochs, callbacks=callbacks, verbose=2 if hvd.rank() == 0 else 0)
if hvd.rank() == 0:
    print("final loss", float(model.evaluate(ds, verbose=0)))
