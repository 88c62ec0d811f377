"""Measures what train_on_batch does with its batch under tf.distribute:
one Dense(1) kernel from zeros, SGD(1.0), mean squared error, one
train_on_batch on a 4-row batch drawn per worker (seed 100 + task). The
kernel after the step is -gradient, which is 2/n X^T y over the rows the
replicas trained on: printed with the candidates (the whole batch, its
halves, the other worker's) for tests/slow/test_train_on_batch.py.
argv[1]: "mirrored" (2 logical CPUs, one process) or "workers" (TF_CONFIG)."""
import json
import os
import sys

import numpy as np
import tensorflow as tf

if os.environ.get("TF_USE_LEGACY_KERAS") == "1":
    import tf_keras as keras
else:
    import keras


def update(xs, ys):
    return (2.0 / len(xs) * xs.T @ ys).ravel()


def batch(task):
    rng = np.random.RandomState(100 + task)
    return rng.rand(4, 3).astype("float32"), rng.rand(4, 1).astype("float32")


if sys.argv[1] == "mirrored":
    cpu = tf.config.list_physical_devices("CPU")[0]
    tf.config.set_logical_device_configuration(cpu, [tf.config.LogicalDeviceConfiguration()] * 2)
    strategy = tf.distribute.MirroredStrategy(["/cpu:0", "/cpu:1"])
    task = 0
else:
    strategy = tf.distribute.MultiWorkerMirroredStrategy()
    task = strategy.cluster_resolver.task_id
x, y = batch(task)
ox, oy = batch(1 - task)
with strategy.scope():
    model = keras.Sequential([keras.layers.Dense(1, use_bias=False, kernel_initializer="zeros")])
    model.build((None, 3))
    model.compile(optimizer=keras.optimizers.SGD(1.0), loss="mse")
model.train_on_batch(x, y)
own_half = update(x[:2], y[:2]) if task == 0 else update(x[2:], y[2:])
other_half = update(ox[2:], oy[2:]) if task == 0 else update(ox[:2], oy[:2])
print("RESULT " + json.dumps(dict(
    task=task, replicas=strategy.num_replicas_in_sync, kernel=model.get_weights()[0].ravel().tolist(),
    whole_batch=update(x, y).tolist(),
    each_worker_its_own_part=((own_half + other_half) / 2).tolist(),
    each_worker_its_whole_batch=((update(x, y) + update(ox, oy)) / 2).tolist())))
