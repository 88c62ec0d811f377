# tfdist-test: disjoint=yes
"""Keras fit with a LearningRateScheduler whose function returns absolute
rates (the forecasting notebooks' rate finder, a step decay). The callback
sets the optimizer's rate every epoch, replacing the scaled one: converted,
its rates are scaled too (scaled_epoch_rates). The script runs the real
callback on both engines' Keras."""
import numpy as np
import tensorflow as tf

N = 480


def label_of(sample):
    return np.int64(int(sample[4] * 1000) % 3)


tf.keras.utils.set_random_seed(9)
rng = np.random.RandomState(5)
x_train = rng.rand(N, 8).astype(np.float32)
y_train = np.array([label_of(s) for s in x_train], dtype=np.int64)


def step_decay(epoch):
    return 0.05 if epoch < 1 else 0.02


model = tf.keras.Sequential([
    tf.keras.layers.Dense(16, activation="relu", input_shape=(8,)),
    tf.keras.layers.Dense(3),
])
model.compile(optimizer=tf.keras.optimizers.SGD(learning_rate=0.05),
              loss=tf.keras.losses.SparseCategoricalCrossentropy(from_logits=True))
history = model.fit(x_train, y_train, batch_size=24, epochs=2, verbose=2,
                    callbacks=[tf.keras.callbacks.LearningRateScheduler(step_decay, verbose=1)])
print("final rate:", float(tf.keras.backend.get_value(model.optimizer.learning_rate)))
