import tensorflow as tf


class Backbone(tf.keras.Model):
    pass
