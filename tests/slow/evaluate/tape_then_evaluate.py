"""A tape loop, then the model compiled and evaluated with Keras's own loop."""
import numpy as np
import tensorflow as tf

rng = np.random.RandomState(0)
x_train = rng.rand(512, 8).astype("float32")
y_train = tf.keras.utils.to_categorical((x_train.sum(axis=1) > 4).astype("int32"), 2)
x_test, y_test = x_train[:128], y_train[:128]
model = tf.keras.Sequential([tf.keras.Input((8,)), tf.keras.layers.Dense(16, activation="relu"),
                             tf.keras.layers.Dense(2, activation="softmax")])
optimizer = tf.keras.optimizers.Adam(0.01)
ds = tf.data.Dataset.from_tensor_slices((x_train, y_train)).shuffle(512, seed=2).batch(32)
for epoch in range(3):
    for xb, yb in ds:
        with tf.GradientTape() as tape:
            loss = tf.reduce_mean(tf.keras.losses.categorical_crossentropy(yb, model(xb, training=True)))
        grads = tape.gradient(loss, model.trainable_variables)
        optimizer.apply_gradients(zip(grads, model.trainable_variables))
model.compile(loss="categorical_crossentropy", optimizer=optimizer, metrics=["accuracy"])
print(model.evaluate(x_test, y_test))
