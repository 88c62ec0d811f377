"""Two models a method returns as a tuple, unpacked into attributes of the trainer
(``(self.classifier, self.scorer) = self._create_models()``), each trained with train_on_batch."""
import numpy as np
import tensorflow as tf
from tensorflow.keras.layers import Dense, Input
from tensorflow.keras.models import Model
from tensorflow.keras.optimizers import Adam


class Pair(object):
    def __init__(self):
        (self.classifier,
         self.scorer) = self._create_models()
        self.classifier.compile(loss="sparse_categorical_crossentropy", optimizer=Adam(1e-3))
        self.scorer.compile(loss="binary_crossentropy", optimizer=Adam(1e-3))

    def _create_models(self):
        inp = Input(shape=(8,))
        x = Dense(16, activation="relu")(inp)
        clf = Model(inp, Dense(3, activation="softmax")(x))
        score = Model(inp, Dense(1, activation="sigmoid")(x))
        return clf, score

    def train(self, x, y, steps):
        for _ in range(steps):
            idx = np.random.randint(0, len(x), 32)
            self.classifier.train_on_batch(x[idx], y[idx])
            self.scorer.train_on_batch(x[idx], (y[idx] > 0).astype("float32"))


rng = np.random.RandomState(0)
x = rng.rand(512, 8).astype("float32")
y = (x[:, 0] * 3).astype("int64")
pair = Pair()
pair.train(x, y, 60)
