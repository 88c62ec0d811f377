"""regression.py converted for Horovod with one deliberate bug: the learning
rate is multiplied by the number of processes twice (x 4 on 2 ranks).
The ranks stay in sync and divide the data correctly.
"""
import os

import numpy as np
import tensorflow as tf
import horovod.tensorflow.keras as hvd

# Horovod: initialize Horovod.
hvd.init()
# Horovod: pin one GPU per process (by local rank).
gpus = tf.config.experimental.list_physical_devices("GPU")
for gpu in gpus:
    tf.config.experimental.set_memory_growth(gpu, True)
if gpus:
    tf.config.experimental.set_visible_devices(gpus[hvd.local_rank()], "GPU")
# Horovod cannot average gradients of Keras 3's fit: stop rather than train wrong.
if int(getattr(tf.keras, "__version__", "2").split(".")[0]) >= 3:
    raise SystemExit("Horovod 0.28 does not average gradients in Keras 3 model.fit (TensorFlow >= 2.16); install tensorflow<2.16, or tf-keras with TF_USE_LEGACY_KERAS=1")

EPOCHS = int(os.environ.get("TFDIST_BENCH_EPOCHS", "6"))
LEARNING_RATE = 0.3

rng = np.random.default_rng(7)


def features(x):
    return np.concatenate([x, x ** 2, x ** 3], axis=1).astype(np.float32)


def target(x):
    return (np.sin(3 * x) + 0.5 * x ** 2).astype(np.float32)


x_raw = np.sort(rng.uniform(-1, 1, size=(2048, 1)), axis=0)
x_train, y_train = features(x_raw), target(x_raw)
x_held = rng.uniform(-1, 1, size=(512, 1))
x_val, y_val = features(x_held), target(x_held)

tf.random.set_seed(7)
model = tf.keras.Sequential([tf.keras.Input(shape=(3,)), tf.keras.layers.Dense(1)])
model.compile(optimizer=hvd.DistributedOptimizer(tf.keras.optimizers.SGD(learning_rate=LEARNING_RATE * hvd.size() * hvd.size())), loss="mse")
history = model.fit(x_train[hvd.rank()::hvd.size()][:len(x_train) // hvd.size()], y_train[hvd.rank()::hvd.size()][:len(y_train) // hvd.size()], batch_size=32, epochs=EPOCHS, validation_data=(x_val[hvd.rank()::hvd.size()][:len(x_val) // hvd.size()], y_val[hvd.rank()::hvd.size()][:len(y_val) // hvd.size()]), verbose=2 if hvd.rank() == 0 else 0, callbacks=[hvd.callbacks.BroadcastGlobalVariablesCallback(0), hvd.callbacks.MetricAverageCallback()])
if hvd.rank() == 0:
    print("final loss %.4f val_loss %.4f" % (history.history["loss"][-1], history.history["val_loss"][-1]))
