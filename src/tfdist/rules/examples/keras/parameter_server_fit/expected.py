"""A tf-keras embedding model trained by fit() on NumPy arrays."""
import numpy as np
import tensorflow as tf
import horovod.tensorflow.keras as hvd
from tensorflow import keras

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

VOCAB = 5000
EPOCHS = 3

rng = np.random.RandomState(0)
x_train = rng.randint(0, VOCAB, size=(1280, 8))
y_train = ((x_train < VOCAB // 2).sum(axis=1) > 4).astype("float32")

model = keras.Sequential([
    keras.layers.Embedding(VOCAB, 32),
    keras.layers.GlobalAveragePooling1D(),
    keras.layers.Dense(1, activation="sigmoid"),
])
optimizer = hvd.DistributedOptimizer(keras.optimizers.Adam(learning_rate=0.01 * hvd.size()))
model.compile(optimizer=optimizer, loss="binary_crossentropy", steps_per_execution=10)

history = model.fit(x_train[hvd.rank()::hvd.size()][:len(x_train) // hvd.size()], y_train[hvd.rank()::hvd.size()][:len(y_train) // hvd.size()], batch_size=32, epochs=EPOCHS, verbose=2 if hvd.rank() == 0 else 0, callbacks=[hvd.callbacks.BroadcastGlobalVariablesCallback(0), hvd.callbacks.MetricAverageCallback()])
if hvd.rank() == 0:
    print(f"final loss {history.history['loss'][-1]:.4f}")
    model.save_weights("model.weights.h5")
