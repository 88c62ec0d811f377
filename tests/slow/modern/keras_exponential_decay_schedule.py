"""A learning-rate schedule handed to the optimizer (the "Overfit and
underfit" tutorial shape): InverseTimeDecay over the steps of an epoch,
Adam, a small binary classifier on a tf.data pipeline that is cached,
shuffled and repeated with steps_per_epoch."""
import numpy as np
import tensorflow as tf

N_TRAIN = 1024
BATCH_SIZE = 32
STEPS_PER_EPOCH = N_TRAIN // BATCH_SIZE

rng = np.random.default_rng(6)
x = rng.normal(size=(N_TRAIN, 28)).astype("float32")
y = (np.sin(x[:, :3]).sum(axis=1, keepdims=True) > 0).astype("float32")

train_ds = (tf.data.Dataset.from_tensor_slices((x, y)).cache()
            .shuffle(N_TRAIN, seed=1).repeat().batch(BATCH_SIZE))

lr_schedule = tf.keras.optimizers.schedules.InverseTimeDecay(
    0.001, decay_steps=STEPS_PER_EPOCH * 10, decay_rate=1, staircase=False)

model = tf.keras.Sequential([
    tf.keras.layers.Input(shape=(28,)),
    tf.keras.layers.Dense(32, activation="elu"),
    tf.keras.layers.Dense(1),
])
model.compile(optimizer=tf.keras.optimizers.Adam(lr_schedule),
              loss=tf.keras.losses.BinaryCrossentropy(from_logits=True),
              metrics=[tf.keras.metrics.BinaryCrossentropy(from_logits=True, name="binary_crossentropy"),
                       "accuracy"])
model.fit(train_ds, steps_per_epoch=STEPS_PER_EPOCH, epochs=3, verbose=2)
