"""A tf-keras embedding model trained by fit() on NumPy arrays."""
import numpy as np
import tensorflow as tf
from tensorflow import keras

VOCAB = 5000
EPOCHS = 3

rng = np.random.RandomState(0)
x_train = rng.randint(0, VOCAB, size=(1280, 8))
y_train = ((x_train < VOCAB // 2).sum(axis=1) > 4).astype("float32")

model = keras.Sequential([
    keras.layers.Embedding(VOCAB, 32),
    keras.layers.GlobalAveragePooling1D(),
    keras.layers.Dense(1, activation="sigmoid"),
])
optimizer = keras.optimizers.Adam(learning_rate=0.01)
model.compile(optimizer=optimizer, loss="binary_crossentropy", steps_per_execution=10)

history = model.fit(x_train, y_train, batch_size=32, epochs=EPOCHS, verbose=2)
print(f"final loss {history.history['loss'][-1]:.4f}")
model.save_weights("model.weights.h5")
