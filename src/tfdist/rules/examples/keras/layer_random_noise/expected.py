"""A layer adding multiplicative noise while training, drawn with keras.random."""
import numpy as np
import keras
import tensorflow as tf
import horovod.keras as hvd
from keras import layers

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


class Jitter(layers.Layer):
    def __init__(self, scale=0.1, **kwargs):
        super().__init__(**kwargs)
        self.scale = scale

    def call(self, inputs, training=False):
        if training:
            noise = keras.random.normal(keras.ops.shape(inputs), stddev=self.scale)
            return inputs * (1.0 + noise)
        return inputs


model = keras.Sequential([keras.Input((8,)), Jitter(), layers.Dense(16, activation="relu"), layers.Dense(1)])
model.compile(optimizer=hvd.DistributedOptimizer(keras.optimizers.Adam(learning_rate=0.001 * hvd.size())), loss="mse")
x = np.random.default_rng(0).random((256, 8)).astype("float32")
y = x.sum(axis=1, keepdims=True)
model.fit(x[hvd.rank()::hvd.size()][:len(x) // hvd.size()], y[hvd.rank()::hvd.size()][:len(y) // hvd.size()], batch_size=32, epochs=2, callbacks=[hvd.callbacks.BroadcastGlobalVariablesCallback(0), hvd.callbacks.MetricAverageCallback()], verbose=1 if hvd.rank() == 0 else 0)
