"""A custom GradientTape loop in the shape tfdist's tf-distribute engine
produces: model and optimizer created inside ``strategy.scope()``, the
dataset distributed with ``experimental_distribute_dataset``, the step run by
``strategy.run`` inside a tf.function, the loss averaged over the global batch,
and a checkpoint written by every worker (the chief at the user's path, the
others in a temporary directory they remove).

    --break scope        each worker builds its own model and optimizer outside
                         the scope and trains them on its shard with a plain
                         local step (no strategy.run): nothing is averaged
    --break shard        the dataset's auto-sharding is switched off: every
                         worker goes through the whole dataset
    --eager              run the step eagerly (no tf.function)
"""
import os
import argparse
import shutil
import tempfile

import numpy as np
import tensorflow as tf

parser = argparse.ArgumentParser()
parser.add_argument("--break", dest="broken", choices=["scope", "shard"])
parser.add_argument("--epochs", type=int, default=2)
parser.add_argument("--dump", metavar="DIR", help="save this worker's final trainable variables to DIR/worker-<task>.npz")
parser.add_argument("--eager", action="store_true")
args = parser.parse_args()

# one worker of a cluster when TF_CONFIG is set, else all local devices
strategy = (tf.distribute.MultiWorkerMirroredStrategy() if "TF_CONFIG" in os.environ
            else tf.distribute.MirroredStrategy())
GLOBAL_BATCH = 16 * strategy.num_replicas_in_sync

rng = np.random.RandomState(0)
x = rng.randn(384, 8).astype("float32")
y = (x @ rng.randn(8, 1) + 0.1 * rng.randn(384, 1)).astype("float32")
dataset = tf.data.Dataset.from_tensor_slices((x, y)).shuffle(384, seed=0).batch(GLOBAL_BATCH)


if args.broken == "shard":
    options = tf.data.Options()
    options.experimental_distribute.auto_shard_policy = tf.data.experimental.AutoShardPolicy.OFF
    dataset = dataset.with_options(options)


def build():
    model = tf.keras.Sequential([
        tf.keras.Input(shape=(8,)),
        tf.keras.layers.Dense(16, activation="relu"),
        tf.keras.layers.Dense(1),
    ])
    return model, tf.keras.optimizers.SGD(0.01 * strategy.num_replicas_in_sync)


tf.keras.utils.set_random_seed(0)
if args.broken == "scope":
    model, optimizer = build()            # outside the scope: plain per-worker variables
else:
    with strategy.scope():
        model, optimizer = build()
loss_fn = tf.keras.losses.MeanSquaredError(reduction="none")


def train_step(xb, yb):
    with tf.GradientTape() as tape:
        pred = model(xb, training=True)
        loss = tf.nn.compute_average_loss(loss_fn(yb, pred), global_batch_size=GLOBAL_BATCH)
    grads = tape.gradient(loss, model.trainable_variables)
    optimizer.apply_gradients(zip(grads, model.trainable_variables))
    return loss


def distributed_step(xb, yb):
    per_replica = strategy.run(train_step, args=(xb, yb))
    return strategy.reduce(tf.distribute.ReduceOp.SUM, per_replica, axis=None)


if not args.eager:
    distributed_step = tf.function(distributed_step)
    train_step_local = tf.function(train_step)
else:
    train_step_local = train_step

chief = strategy.extended.should_checkpoint
for epoch in range(args.epochs):
    total, n = 0.0, 0
    if args.broken == "scope":
        ctx = strategy.cluster_resolver.task_id if "TF_CONFIG" in os.environ else 0
        for xb, yb in dataset.rebatch(16).shard(strategy.num_replicas_in_sync, ctx):
            total += float(train_step_local(xb, yb))
            n += 1
    else:
        for xb, yb in strategy.experimental_distribute_dataset(dataset):
            total += float(distributed_step(xb, yb))
            n += 1
    if chief:
        print(f"epoch {epoch + 1}: loss {total / max(n, 1):.4f} ({n} steps)", flush=True)

ckpt = tf.train.Checkpoint(model=model, optimizer=optimizer)
if chief:
    ckpt.write(os.path.join("ckpt", "model"))
else:
    tmp = tempfile.mkdtemp()
    ckpt.write(os.path.join(tmp, "model"))
    shutil.rmtree(tmp, ignore_errors=True)
if args.dump:
    task = strategy.cluster_resolver.task_id if "TF_CONFIG" in os.environ else 0
    np.savez(os.path.join(args.dump, f"worker-{task}.npz"), *[np.asarray(v.numpy()) for v in model.trainable_variables])
print("done", "chief" if chief else "worker", flush=True)
