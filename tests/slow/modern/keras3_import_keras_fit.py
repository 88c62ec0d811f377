"""A Keras 3-native script (keras.io examples shape): ``import keras`` and
``from keras import layers``, a Sequential convnet with keras.Input,
categorical labels from keras.utils.to_categorical, fit with
validation_split, evaluate, and the model saved in the native format."""
import keras
import numpy as np
from keras import layers

num_classes = 4
input_shape = (12, 12, 1)
rng = np.random.default_rng(40)
x_train = rng.random((1024, 12, 12, 1)).astype("float32")
quadrant = np.stack([x_train[:, :6, :6].mean((1, 2, 3)), x_train[:, :6, 6:].mean((1, 2, 3)),
                     x_train[:, 6:, :6].mean((1, 2, 3)), x_train[:, 6:, 6:].mean((1, 2, 3))], axis=1)
y_train = keras.utils.to_categorical(quadrant.argmax(axis=1), num_classes)
x_test, y_test = x_train[:256], y_train[:256]

model = keras.Sequential(
    [
        keras.Input(shape=input_shape),
        layers.Conv2D(8, kernel_size=(3, 3), activation="relu"),
        layers.MaxPooling2D(pool_size=(2, 2)),
        layers.Flatten(),
        layers.Dropout(0.2),
        layers.Dense(num_classes, activation="softmax"),
    ]
)
model.summary()

batch_size = 32
epochs = 4
model.compile(loss="categorical_crossentropy", optimizer="adam", metrics=["accuracy"])
model.fit(x_train, y_train, batch_size=batch_size, epochs=epochs, validation_split=0.1)
score = model.evaluate(x_test, y_test, verbose=0)
print("Test loss:", score[0])
print("Test accuracy:", score[1])
model.save("convnet.keras")
