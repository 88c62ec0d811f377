"""Train a small MLP classifier with the Keras Sequential API.

The data is synthetic: 1000 points in 20 dimensions, labelled by a fixed
random linear rule (plus a little label noise), so the model has something
real to learn. Training uses `model.fit` on a `tf.data` pipeline with the
usual callbacks: checkpoints, TensorBoard logs and early stopping.

Outputs (relative to the working directory):
    ./checkpoints/   per-epoch weight checkpoints
    ./logs/          TensorBoard event files
    ./model.weights.h5  final weights
"""
import os

import numpy as np
import tensorflow as tf

# ---------------------------------------------------------------------------
# Hyper-parameters
# ---------------------------------------------------------------------------
NUM_SAMPLES = 1000
NUM_FEATURES = 20
BATCH_SIZE = 32
EPOCHS = int(os.environ.get("TFDIST_BENCH_EPOCHS", "3"))
LEARNING_RATE = 1e-3
SEED = 0

# Seeds Python's `random`, NumPy and TensorFlow in one go (Keras weight
# initializers draw their seeds from Python's `random`).
tf.keras.utils.set_random_seed(SEED)

# ---------------------------------------------------------------------------
# Synthetic data: y = 1[x . w_true + 0.1 * noise > 0]
# ---------------------------------------------------------------------------
x = np.random.randn(NUM_SAMPLES, NUM_FEATURES).astype("float32")
w_true = np.random.randn(NUM_FEATURES, 1).astype("float32")
y = (x @ w_true + 0.1 * np.random.randn(NUM_SAMPLES, 1) > 0).astype("float32")

train_ds = tf.data.Dataset.from_tensor_slices((x, y)).shuffle(NUM_SAMPLES, seed=SEED).batch(BATCH_SIZE)

# ---------------------------------------------------------------------------
# Model
# ---------------------------------------------------------------------------
model = tf.keras.Sequential([
    tf.keras.layers.Dense(64, activation="relu", input_shape=(NUM_FEATURES,)),
    tf.keras.layers.Dense(32, activation="relu"),
    tf.keras.layers.Dense(1, activation="sigmoid"),
])

opt = tf.keras.optimizers.Adam(learning_rate=LEARNING_RATE)
model.compile(optimizer=opt, loss="binary_crossentropy", metrics=["accuracy"])
model.summary()

history = model.fit(
    train_ds,
    epochs=EPOCHS,
    verbose=2,
    callbacks=[
        tf.keras.callbacks.ModelCheckpoint("./checkpoints/ckpt-{epoch:02d}.weights.h5", save_weights_only=True),
        tf.keras.callbacks.TensorBoard(log_dir="./logs"),
        tf.keras.callbacks.EarlyStopping(monitor="loss", patience=2),
    ],
)

print(f"final loss {history.history['loss'][-1]:.4f}")
model.save_weights("./model.weights.h5")
