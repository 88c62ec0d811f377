"""An autoencoder with an auxiliary output whose loss ignores its target:
the target is given a batch dimension in the map after .batch() (a dummy
of zeros per sample), as tfdist's refusal of a scalar there advises."""
import numpy as np
import tensorflow as tf

x = np.random.RandomState(0).rand(512, 8).astype("float32")
inputs = tf.keras.Input((8,))
hidden = tf.keras.layers.Dense(8, activation="relu")(inputs)
recon = tf.keras.layers.Dense(8, name="recon")(hidden)
aux = tf.keras.layers.Dense(1, name="aux")(hidden)
model = tf.keras.Model(inputs, [recon, aux])


def aux_loss(y_true, y_pred):
    return tf.reduce_mean(tf.square(y_pred))


model.compile(optimizer="adam", loss=["mse", aux_loss])
train_dataset = tf.data.Dataset.from_tensor_slices(x).shuffle(512, seed=1).batch(32)
train_dataset = train_dataset.map(lambda v: (v, (v, tf.zeros_like(v[:, :1]))))
model.fit(train_dataset, epochs=3)
