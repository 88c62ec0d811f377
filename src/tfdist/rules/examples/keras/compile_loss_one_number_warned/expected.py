"""A regression whose loss function averages the errors itself: compile(loss=fn)
with fn returning one number."""
import numpy as np
import tensorflow as tf
import horovod.keras as hvd
import keras

# Horovod: initialize Horovod.
hvd.init()
# Horovod: pin one GPU per process (by local rank).
gpus = tf.config.experimental.list_physical_devices("GPU")
for gpu in gpus:
    tf.config.experimental.set_memory_growth(gpu, True)
if gpus:
    tf.config.experimental.set_visible_devices(gpus[hvd.local_rank()], "GPU")
# Horovod cannot average gradients of Keras 3's fit: stop rather than train wrong.
if int(keras.__version__.split(".")[0]) >= 3:
    raise SystemExit("Horovod 0.28 does not average gradients in Keras 3 model.fit (TensorFlow >= 2.16); install tensorflow<2.16, or tf-keras with TF_USE_LEGACY_KERAS=1")


def mean_abs_loss(y_true, y_pred):
    return tf.reduce_mean(tf.abs(y_true - y_pred))


rng = np.random.default_rng(0)
x = rng.random((64, 4)).astype("float32")
y = (x @ np.array([1.0, -2.0, 3.0, 0.5], "float32"))[:, None]
model = keras.Sequential([keras.Input((4,)), keras.layers.Dense(1, kernel_initializer="zeros")])
model.compile(optimizer=hvd.DistributedOptimizer(keras.optimizers.SGD(0.01 * hvd.size())), loss=mean_abs_loss)
if hvd.rank() == 0:
    print("loss before training (evaluate):", model.evaluate(x, y, batch_size=16, verbose=0))
history = model.fit(x[hvd.rank()::hvd.size()][:len(x) // hvd.size()], y[hvd.rank()::hvd.size()][:len(y) // hvd.size()], batch_size=16, epochs=1, verbose=0, shuffle=False, callbacks=[hvd.callbacks.BroadcastGlobalVariablesCallback(0), hvd.callbacks.MetricAverageCallback()])
if hvd.rank() == 0:
    print("loss logged by fit:", history.history["loss"][0])
print("kernel after 1 epoch:", model.layers[0].kernel.numpy().ravel().round(4).tolist())
