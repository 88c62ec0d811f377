"""Keras 3 (`import keras`): fit() on a keras.utils.PyDataset subclass, the
Keras 3 name of a Sequence."""
import keras
import numpy as np


class Windows(keras.utils.PyDataset):
    def __init__(self, x, y, batch_size, **kwargs):
        super().__init__(**kwargs)
        self.x, self.y, self.batch_size = x, y, batch_size

    def __len__(self):
        return len(self.x) // self.batch_size

    def __getitem__(self, index):
        part = slice(index * self.batch_size, (index + 1) * self.batch_size)
        return self.x[part], self.y[part]


rng = np.random.default_rng(7)
x = rng.normal(size=(1024, 6)).astype("float32")
y = (np.sin(x).sum(axis=1, keepdims=True)).astype("float32")
train = Windows(x, y, batch_size=32)

keras.utils.set_random_seed(2)
model = keras.Sequential([keras.Input(shape=(6,)), keras.layers.Dense(32, activation="tanh"), keras.layers.Dense(1)])
model.compile(optimizer=keras.optimizers.Adam(3e-3), loss="mse")
history = model.fit(train, epochs=3, verbose=2)
print("final loss", history.history["loss"][-1])
