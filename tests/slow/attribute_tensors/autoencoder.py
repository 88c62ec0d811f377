"""An autoencoder whose tensors are kept in instance attributes while it is
built (self.inputs, self.outputs), trained with fit, then its decoder asked
for a grid of 25 samples -- with tf.functions run eagerly, as a debugging
script does."""
import numpy as np
import tensorflow as tf
from tensorflow.keras import Model
from tensorflow.keras.layers import Dense, Input, ReLU

tf.config.run_functions_eagerly(True)


class AutoEncoder(object):
    def __init__(self, original_dimension=16, latent_dimension=2):
        self.original_dimension = original_dimension
        self.latent_dimension = latent_dimension
        self.inputs = None
        self.outputs = None

    def build(self):
        self.inputs = Input(shape=(self.original_dimension,))
        x = Dense(8)(self.inputs)
        x = ReLU()(x)
        self.code = Dense(self.latent_dimension)(x)
        self.encoder = Model(self.inputs, self.code)
        latent_inputs = Input(shape=(self.latent_dimension,))
        self.outputs = Dense(self.original_dimension, activation="sigmoid")(latent_inputs)
        self.decoder = Model(latent_inputs, self.outputs)
        self.outputs = self.decoder(self.encoder(self.inputs))
        self.model = Model(self.inputs, self.outputs)

    def train(self, x, epochs=4, batch_size=32):
        self.model.compile(optimizer=tf.keras.optimizers.Adam(learning_rate=0.01), loss="mse")
        self.model.fit(x, x, epochs=epochs, batch_size=batch_size)


rng = np.random.RandomState(0)
data = rng.rand(512, 16).astype("float32")
tf.random.set_seed(1)
ae = AutoEncoder()
ae.build()
ae.train(data)
grid = np.array([[a, b] for a in np.linspace(-2, 2, 5) for b in np.linspace(-2, 2, 5)], dtype="float32")
print("decoded grid", ae.decoder.predict(grid).shape)
