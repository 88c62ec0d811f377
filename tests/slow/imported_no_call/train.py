"""Trains the Denoiser of denoiser.py, made by that module's factory, with fit on a tf.data dataset."""
import numpy as np
import tensorflow as tf

import denoiser

rng = np.random.RandomState(0)
clean = rng.rand(512, 8).astype("float32")
noise = rng.normal(size=(512, 8)).astype("float32")
dataset = tf.data.Dataset.from_tensor_slices((clean, noise)).batch(32)
model = denoiser.create_model(32, 1e-3)
model.fit(dataset, epochs=3)
