"""Console output holding a Keras model's fit, evaluate and predict: under tf.distribute each runs
on every worker (a collective) and its output must appear once."""
import numpy as np
import tensorflow as tf

rng = np.random.RandomState(0)
x = rng.rand(512, 8).astype("float32")
y = (x @ rng.rand(8, 1)).astype("float32")
model = tf.keras.Sequential([tf.keras.Input((8,)), tf.keras.layers.Dense(1)])
model.compile(optimizer=tf.keras.optimizers.SGD(0.05), loss="mse")
print("FIT last loss", model.fit(x, y, epochs=3, batch_size=32, verbose=0).history["loss"][-1])
print(f"EVAL loss {model.evaluate(x, y, batch_size=64, verbose=0):.4f}")
print("PRED rows", len(model.predict(x[:64], batch_size=32, verbose=0)))
