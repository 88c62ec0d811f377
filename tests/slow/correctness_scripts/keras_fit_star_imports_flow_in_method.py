# tfdist-test: disjoint=yes coverage=0.9
"""Keras names from star imports (``from tensorflow.keras.layers import *``,
the style of several books): the optimizer, the model class and the
ImageDataGenerator are known by what the imports bind. The arrays reach
fit() through a method's parameters, as an ImageDataGenerator flow."""
import numpy as np
import tensorflow as tf
from tensorflow.keras.layers import *
from tensorflow.keras.models import *
from tensorflow.keras.optimizers import *
from tensorflow.keras.preprocessing.image import *


def label_of(sample):
    return np.int64(int(sample[0, 0, 0] * 1000) % 3)


class Trainer:
    def __init__(self, lr):
        inputs = Input(shape=(4, 4, 1))
        outputs = Dense(3)(Flatten()(inputs))
        self.model = Model(inputs, outputs)
        self.model.compile(optimizer=Adam(learning_rate=lr),
                           loss=tf.keras.losses.SparseCategoricalCrossentropy(from_logits=True))

    def train(self, x_train, y_train, batch_size=24, epochs=2):
        augmenter = ImageDataGenerator()
        flow = augmenter.flow(x_train, y_train, batch_size)
        return self.model.fit(flow, steps_per_epoch=len(x_train) // batch_size, epochs=epochs, verbose=2)


tf.keras.utils.set_random_seed(24)
images = np.random.RandomState(5).rand(576, 4, 4, 1).astype("float32")
labels = np.array([label_of(s) for s in images], dtype="int64")
Trainer(0.01).train(images, labels)
