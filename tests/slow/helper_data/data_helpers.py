"""The input pipeline of gan_next.py: another module of the project."""
import tensorflow as tf


def make_dataset(images, batch_size):
    ds = tf.data.Dataset.from_tensor_slices(images).shuffle(512, seed=7).batch(batch_size, drop_remainder=True)
    return ds, images.shape[1:], len(images)
