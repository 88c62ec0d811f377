"""TensorFlow bound as tf only further down than the first import of it (a held-out book's listing:
`from tensorflow import keras` at the top, `import tensorflow as tf` where a later section needs it)."""
from tensorflow import keras
import numpy as np

x = np.random.RandomState(0).rand(256, 4).astype("float32")
y = (x.sum(axis=1, keepdims=True) > 2).astype("float32")

import tensorflow as tf

model = keras.Sequential([keras.Input(shape=(4,)), keras.layers.Dense(1, activation="sigmoid")])
model.compile(optimizer=keras.optimizers.SGD(0.1), loss="binary_crossentropy")
history = model.fit(x, y, epochs=5, batch_size=16, verbose=0)
print("LOSS", history.history["loss"][0], history.history["loss"][-1], tf.__version__)
