# tfdist-test: disjoint=yes coverage=0.9
"""A Keras model stored as an attribute of the tensorflow module
(`tf.model = tf.keras.Sequential()`), as some tutorials do."""
import numpy as np
import tensorflow as tf


def label_of(sample):
    return np.float32(2.0 * np.asarray(sample).reshape(-1)[0])


tf.keras.utils.set_random_seed(25)
x_train = np.arange(1, 193, dtype=np.float32) / 96.0
y_train = 2.0 * x_train

tf.model = tf.keras.Sequential()
tf.model.add(tf.keras.layers.Dense(units=1, input_dim=1))
tf.model.compile(loss="mse", optimizer=tf.keras.optimizers.SGD(learning_rate=0.01))
tf.model.summary()
history = tf.model.fit(x_train, y_train, batch_size=16, epochs=3)
print(tf.model.predict(np.array([5, 4])))
