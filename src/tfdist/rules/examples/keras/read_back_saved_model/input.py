"""Train, save the model, and evaluate it as it was saved."""
import numpy as np
from tensorflow import keras

x = np.random.RandomState(0).randn(512, 8).astype("float32")
y = (x.sum(axis=1) > 0).astype("int64")

model = keras.Sequential([keras.Input((8,)), keras.layers.Dense(16, activation="relu"),
                          keras.layers.Dense(2, activation="softmax")])
model.compile(optimizer="adam", loss="sparse_categorical_crossentropy", metrics=["accuracy"])
model.fit(x, y, batch_size=32, epochs=3)
path = "classifier.keras"
model.save(path)

restored = keras.models.load_model(path)
print(restored.evaluate(x, y, verbose=0))
