"""Keras fit on a model class defined two modules away."""
import tensorflow as tf
from models import Net

model = Net(64)
model.compile(optimizer=tf.keras.optimizers.SGD(0.01), loss="mse")
ds = tf.data.Dataset.from_tensor_slices(([[1.0]], [[2.0]])).batch(1)
model.fit(ds, epochs=2)
