"""A subclassed model built by its first call, inside a print, before
fit: under MultiWorkerMirroredStrategy that first call makes the model's
variables, which the workers agree on with a collective -- so it must run
on every worker, not under the chief's print guard."""
import numpy as np
import tensorflow as tf

rng = np.random.RandomState(0)
x = rng.rand(1024, 8).astype("float32")
y = (x.sum(axis=1) > 4).astype("int64")
train_ds = tf.data.Dataset.from_tensor_slices((x, y)).shuffle(1024, seed=1).batch(32)


class Net(tf.keras.Model):
    def __init__(self):
        super().__init__()
        self.d1 = tf.keras.layers.Dense(16, activation="relu")
        self.d2 = tf.keras.layers.Dense(2)

    def call(self, inputs):
        return self.d2(self.d1(inputs))


model = Net()
sample_x, sample_y = next(iter(train_ds))
print(model(sample_x).shape)
model.compile(optimizer=tf.keras.optimizers.Adam(0.01),
              loss=tf.keras.losses.SparseCategoricalCrossentropy(from_logits=True), metrics=["accuracy"])
model.fit(train_ds, epochs=3)
