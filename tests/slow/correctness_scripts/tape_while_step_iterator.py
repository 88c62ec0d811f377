# tfdist-test: ranks=2,3 disjoint=yes coverage=0.9
"""`while step < TOTAL_STEPS` with next(iterator) over a repeated dataset."""
import numpy as np
import tensorflow as tf


def label_of(sample):
    return np.asarray(sample, np.float32).mean(keepdims=True)


TOTAL_STEPS = 48
tf.keras.utils.set_random_seed(17)
images = np.random.RandomState(2).rand(384, 12).astype("float32")
targets = images.mean(axis=1, keepdims=True)
iterator = iter(tf.data.Dataset.from_tensor_slices((images, targets)).repeat().batch(16))
model = tf.keras.Sequential([tf.keras.layers.Dense(8, activation="tanh", input_shape=(12,)),
                             tf.keras.layers.Dense(1)])
optimizer = tf.keras.optimizers.Adam()

step = 0
while step < TOTAL_STEPS:
    xb, yb = next(iterator)
    with tf.GradientTape() as tape:
        loss = tf.reduce_mean(tf.square(model(xb) - yb))
    grads = tape.gradient(loss, model.trainable_variables)
    optimizer.apply_gradients(zip(grads, model.trainable_variables))
    step += 1
print("loss", float(loss))
