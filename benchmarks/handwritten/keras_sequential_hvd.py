"""Hand-written Horovod version of examples/keras_sequential.py.

Converted by hand following Horovod's Keras documentation
(docs/keras.rst, examples/tensorflow2/tensorflow2_keras_mnist.py):
hvd.init(), one GPU per process, learning rate scaled by hvd.size(),
hvd.DistributedOptimizer, broadcast + metric-average callbacks first,
checkpoints / TensorBoard / console output / final save on rank 0 only, and
the dataset sharded so each worker sees a distinct part of it.

Run with e.g.:  horovodrun -np 2 -H localhost:2 --gloo python keras_sequential_hvd.py
"""
import os

import numpy as np
import tensorflow as tf
import horovod.tensorflow.keras as hvd

# ---------------------------------------------------------------------------
# Hyper-parameters (identical to the single-GPU example)
# ---------------------------------------------------------------------------
NUM_SAMPLES = 1000
NUM_FEATURES = 20
BATCH_SIZE = 32
EPOCHS = int(os.environ.get("TFDIST_BENCH_EPOCHS", "3"))
LEARNING_RATE = 1e-3
SEED = 0

# Horovod: initialize Horovod.
hvd.init()

# Horovod: pin GPU to be used to process local rank (one GPU per process).
gpus = tf.config.experimental.list_physical_devices("GPU")
for gpu in gpus:
    tf.config.experimental.set_memory_growth(gpu, True)
if gpus:
    tf.config.experimental.set_visible_devices(gpus[hvd.local_rank()], "GPU")

# Seeds Python's `random`, NumPy and TensorFlow in one go (Keras weight
# initializers draw their seeds from Python's `random`).
tf.keras.utils.set_random_seed(SEED)

# ---------------------------------------------------------------------------
# Synthetic data: y = 1[x . w_true + 0.1 * noise > 0]  (same on every rank)
# ---------------------------------------------------------------------------
x = np.random.randn(NUM_SAMPLES, NUM_FEATURES).astype("float32")
w_true = np.random.randn(NUM_FEATURES, 1).astype("float32")
y = (x @ w_true + 0.1 * np.random.randn(NUM_SAMPLES, 1) > 0).astype("float32")

# Horovod: shard the data so each worker trains on a different subset.
train_ds = (tf.data.Dataset.from_tensor_slices((x, y))
            .shard(hvd.size(), hvd.rank())
            .shuffle(NUM_SAMPLES, seed=SEED)
            .batch(BATCH_SIZE))

# ---------------------------------------------------------------------------
# Model
# ---------------------------------------------------------------------------
model = tf.keras.Sequential([
    tf.keras.layers.Dense(64, activation="relu", input_shape=(NUM_FEATURES,)),
    tf.keras.layers.Dense(32, activation="relu"),
    tf.keras.layers.Dense(1, activation="sigmoid"),
])

# Horovod: adjust learning rate based on number of workers.
opt = tf.keras.optimizers.Adam(learning_rate=LEARNING_RATE * hvd.size())

# Horovod: add Horovod DistributedOptimizer.
opt = hvd.DistributedOptimizer(opt)

model.compile(optimizer=opt, loss="binary_crossentropy", metrics=["accuracy"])
if hvd.rank() == 0:
    model.summary()

callbacks = [
    # Horovod: broadcast initial variable states from rank 0 to all other processes.
    hvd.callbacks.BroadcastGlobalVariablesCallback(0),
    # Horovod: average metrics among workers at the end of every epoch.
    # Must come before EarlyStopping / TensorBoard / other metric-based callbacks.
    hvd.callbacks.MetricAverageCallback(),
    # Runs on every worker; it sees the averaged loss, so all workers stop together.
    tf.keras.callbacks.EarlyStopping(monitor="loss", patience=2),
]

# Horovod: save checkpoints and write TensorBoard logs only on worker 0.
if hvd.rank() == 0:
    callbacks.append(tf.keras.callbacks.ModelCheckpoint("./checkpoints/ckpt-{epoch:02d}.h5", save_weights_only=True))
    callbacks.append(tf.keras.callbacks.TensorBoard(log_dir="./logs"))

# Horovod: write logs on worker 0 only.
verbose = 2 if hvd.rank() == 0 else 0

history = model.fit(
    train_ds,
    epochs=EPOCHS,
    verbose=verbose,
    callbacks=callbacks,
)

if hvd.rank() == 0:
    print(f"final loss {history.history['loss'][-1]:.4f}")
    model.save_weights("./model_weights.h5")
