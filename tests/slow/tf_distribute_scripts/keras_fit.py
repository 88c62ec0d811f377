"""A Keras Model.fit script in the shape tfdist's tf-distribute engine
produces: MultiWorkerMirroredStrategy when TF_CONFIG is set (with tf-keras,
since multi-worker fit is broken under Keras 3), else MirroredStrategy; model
and compile inside the scope; the global batch and the learning rate scaled
by the number of replicas; checkpoints and TensorBoard logs by every worker
(Keras sends the non-chief workers' into temporary directories it removes);
the final weights saved by the chief at the user's path and by the others in
a temporary directory.

    --break checkpoint   the non-chief workers also save their final weights at
                         the user's directory (worker<N>-final.weights.h5)
"""
import os
if "TF_CONFIG" in os.environ:  # multi-worker Model.fit needs tf-keras (keras-team/keras#20585)
    os.environ.setdefault("TF_USE_LEGACY_KERAS", "1")
import argparse
import shutil
import tempfile

import numpy as np
import tensorflow as tf

parser = argparse.ArgumentParser()
parser.add_argument("--break", dest="broken", choices=["checkpoint"])
parser.add_argument("--epochs", type=int, default=2)
parser.add_argument("--dump", metavar="DIR", help="save this worker's final trainable variables to DIR/worker-<task>.npz")
args = parser.parse_args()

tf.keras.utils.set_random_seed(0)
# one worker of a cluster when TF_CONFIG is set, else all local devices
strategy = (tf.distribute.MultiWorkerMirroredStrategy() if "TF_CONFIG" in os.environ
            else tf.distribute.MirroredStrategy())

rng = np.random.RandomState(0)
x = rng.randn(512, 8).astype("float32")
y = (x @ rng.randn(8, 1) + 0.1 * rng.randn(512, 1)).astype("float32")
ds = tf.data.Dataset.from_tensor_slices((x, y)).shuffle(512, seed=0).batch(16 * strategy.num_replicas_in_sync)

with strategy.scope():
    model = tf.keras.Sequential([
        tf.keras.Input(shape=(8,)),
        tf.keras.layers.Dense(16, activation="relu"),
        tf.keras.layers.Dense(1),
    ])
    opt = tf.keras.optimizers.Adam(1e-3 * strategy.num_replicas_in_sync)
    model.compile(optimizer=opt, loss="mse", metrics=["mae"])

chief = strategy.extended.should_checkpoint
os.makedirs("ckpt", exist_ok=True)
model.fit(ds, epochs=args.epochs, verbose=2 if chief else 0,
          callbacks=[tf.keras.callbacks.ModelCheckpoint("ckpt/weights.{epoch}.weights.h5", save_weights_only=True),
                     tf.keras.callbacks.TensorBoard("logs")])

if chief:
    model.save_weights("final.weights.h5")
elif args.broken == "checkpoint":
    model.save_weights(f"worker{strategy.cluster_resolver.task_id}-final.weights.h5")
else:
    tmp = tempfile.mkdtemp()
    model.save_weights(os.path.join(tmp, "final.weights.h5"))
    shutil.rmtree(tmp, ignore_errors=True)
if args.dump:
    task = strategy.cluster_resolver.task_id if "TF_CONFIG" in os.environ else 0
    np.savez(os.path.join(args.dump, f"worker-{task}.npz"), *[np.asarray(v.numpy()) for v in model.trainable_variables])
print("done", "chief" if chief else "worker", flush=True)
