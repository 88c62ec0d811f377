"""Train, save the model, and evaluate it as it was saved."""
import numpy as np
from tensorflow import keras
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

x = np.random.RandomState(0).randn(512, 8).astype("float32")
y = (x.sum(axis=1) > 0).astype("int64")

model = keras.Sequential([keras.Input((8,)), keras.layers.Dense(16, activation="relu"),
                          keras.layers.Dense(2, activation="softmax")])
model.compile(optimizer=hvd.DistributedOptimizer(tf.keras.optimizers.Adam(learning_rate=0.001 * hvd.size())), loss="sparse_categorical_crossentropy", metrics=["accuracy"])
model.fit(x[hvd.rank()::hvd.size()][:len(x) // hvd.size()], y[hvd.rank()::hvd.size()][:len(y) // hvd.size()], batch_size=32, epochs=3, callbacks=[hvd.callbacks.BroadcastGlobalVariablesCallback(0), hvd.callbacks.MetricAverageCallback()], verbose=1 if hvd.rank() == 0 else 0)
path = "classifier.keras"
if hvd.rank() == 0:
    model.save(path)

restored = keras.models.load_model(path)
if hvd.rank() == 0:
    print(restored.evaluate(x, y, verbose=0))
