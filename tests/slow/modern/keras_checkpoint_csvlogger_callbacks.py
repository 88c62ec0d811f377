"""Training with the usual file-writing callbacks (the "Save and load" and
callbacks guides): ModelCheckpoint keeping the best weights, CSVLogger,
TensorBoard logs; the best checkpoint is loaded back and evaluated."""
import os

import numpy as np
import tensorflow as tf

rng = np.random.default_rng(5)
x = rng.normal(size=(960, 6)).astype("float32")
y = (x @ rng.normal(size=(6, 1))).astype("float32")

checkpoint_dir = "training_checkpoints"
os.makedirs(checkpoint_dir, exist_ok=True)
checkpoint_path = os.path.join(checkpoint_dir, "best.weights.h5")

model = tf.keras.Sequential([
    tf.keras.Input(shape=(6,)),
    tf.keras.layers.Dense(16, activation="relu"),
    tf.keras.layers.Dense(1),
])
model.compile(optimizer=tf.keras.optimizers.SGD(learning_rate=0.02), loss="mse")
callbacks = [
    tf.keras.callbacks.ModelCheckpoint(checkpoint_path, save_weights_only=True, save_best_only=True,
                                       monitor="val_loss"),
    tf.keras.callbacks.CSVLogger("training_log.csv"),
    tf.keras.callbacks.TensorBoard(log_dir="logs/fit"),
]
model.fit(x, y, batch_size=32, epochs=8, validation_split=0.25, callbacks=callbacks)
model.load_weights(checkpoint_path)
print("restored loss", model.evaluate(x, y, verbose=0))
