"""A regression whose loss function averages the errors itself: compile(loss=fn)
with fn returning one number."""
import numpy as np
import tensorflow as tf
import keras


def mean_abs_loss(y_true, y_pred):
    return tf.reduce_mean(tf.abs(y_true - y_pred))


rng = np.random.default_rng(0)
x = rng.random((64, 4)).astype("float32")
y = (x @ np.array([1.0, -2.0, 3.0, 0.5], "float32"))[:, None]
model = keras.Sequential([keras.Input((4,)), keras.layers.Dense(1, kernel_initializer="zeros")])
model.compile(optimizer=keras.optimizers.SGD(0.01), loss=mean_abs_loss)
print("loss before training (evaluate):", model.evaluate(x, y, batch_size=16, verbose=0))
history = model.fit(x, y, batch_size=16, epochs=1, verbose=0, shuffle=False)
print("loss logged by fit:", history.history["loss"][0])
print("kernel after 1 epoch:", model.layers[0].kernel.numpy().ravel().round(4).tolist())
