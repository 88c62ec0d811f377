"""A Keras fit() script that dies at the end of an epoch when asked to
(TFDIST_TEST_DIE_AFTER_EPOCH=N, 1-based): a killed job, for the
--fault-tolerant (BackupAndRestore) test. It prints the epochs it starts."""
import os

import numpy as np
import tensorflow as tf

DIE_AFTER = int(os.environ.get("TFDIST_TEST_DIE_AFTER_EPOCH", "0"))


class Progress(tf.keras.callbacks.Callback):
    def on_epoch_begin(self, epoch, logs=None):
        print(f"starting epoch {epoch + 1}", flush=True)

    def on_epoch_end(self, epoch, logs=None):
        if DIE_AFTER and epoch + 1 == DIE_AFTER:
            print(f"dying after epoch {epoch + 1}", flush=True)
            os._exit(17)


rng = np.random.RandomState(0)
x = rng.rand(512, 8).astype("float32")
y = (x.sum(axis=1) > 4).astype("float32")
dataset = tf.data.Dataset.from_tensor_slices((x, y)).shuffle(512, seed=1).batch(32)

model = tf.keras.Sequential([tf.keras.layers.Dense(16, activation="relu"), tf.keras.layers.Dense(1, activation="sigmoid")])
model.compile(optimizer=tf.keras.optimizers.SGD(0.05), loss="binary_crossentropy")
history = model.fit(dataset, epochs=4, verbose=0, callbacks=[Progress()])
print(f"final loss {history.history['loss'][-1]:.4f}")
