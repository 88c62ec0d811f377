"""A subclassed model trained by fit on a tf.data pipeline (the "Making new
layers and models via subclassing" guide): layers created in __init__,
call() with a training flag and Dropout, the dataset shuffled, batched and
prefetched with AUTOTUNE."""
import numpy as np
import tensorflow as tf

rng = np.random.default_rng(3)
x = rng.normal(size=(1024, 12)).astype("float32")
y = (x[:, :4].sum(axis=1) > 0).astype("int32")


class Classifier(tf.keras.Model):
    def __init__(self, units=24, classes=2):
        super().__init__()
        self.hidden = tf.keras.layers.Dense(units, activation="relu")
        self.dropout = tf.keras.layers.Dropout(0.1)
        self.out = tf.keras.layers.Dense(classes)

    def call(self, inputs, training=False):
        h = self.hidden(inputs)
        h = self.dropout(h, training=training)
        return self.out(h)


train_ds = tf.data.Dataset.from_tensor_slices((x, y)).shuffle(1024, seed=0).batch(32).prefetch(tf.data.AUTOTUNE)

model = Classifier()
model.compile(optimizer=tf.keras.optimizers.Adam(1e-2),
              loss=tf.keras.losses.SparseCategoricalCrossentropy(from_logits=True),
              metrics=["accuracy"])
model.fit(train_ds, epochs=3)
