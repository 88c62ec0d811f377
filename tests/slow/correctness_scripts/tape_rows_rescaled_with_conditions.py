# tfdist-test: ranks=2 disjoint=yes
"""A GradientTape step loop cutting rows of the images and labels, then
rescaling the images in place, name rebound step after step
(``xb = xb / 0.5 - 1.0``, ``xb = xb.astype(...)``, as GAN recipes do), and
computing the model's conditions from the label rows in a way tfdist does
not follow (``np.eye(4)[yb]``). Both arrays are sliced by rank where final:
the conditions, made from the rank's label rows, stay paired with its
images, which label_of checks (a condition that disagrees with the image's
label gives no label)."""
import numpy as np
import tensorflow as tf


def label_of(sample):
    sample = np.asarray(sample, np.float64)
    label = int(round(((sample[2] + 1.0) * 0.5) * 1000, 3)) % 4
    return np.int64(label if int(np.argmax(sample[8:])) == label else -1)


tf.keras.utils.set_random_seed(29)
rng = np.random.RandomState(5)
x_train = rng.rand(480, 8)
x_train = np.round(x_train, 3)  # labels read back exactly from the rescaled float32 rows
y_train = np.array([int(round(r[2] * 1000)) % 4 for r in x_train], dtype=np.int64)
model = tf.keras.Sequential([tf.keras.layers.Dense(4, input_shape=(12,))])
optimizer = tf.keras.optimizers.SGD(learning_rate=0.05)
loss_fn = tf.keras.losses.SparseCategoricalCrossentropy(from_logits=True)
B = 24

for epoch in range(2):
    for i in range(len(x_train) // B):
        xb = x_train[i * B:(i + 1) * B]
        xb = xb / 0.5 - 1.0
        xb = xb.astype("float32")
        yb = y_train[i * B:(i + 1) * B]
        cond = np.eye(4, dtype="float32")[yb]
        with tf.GradientTape() as tape:
            logits = model(tf.concat([xb, cond], axis=1), training=True)
            loss_value = loss_fn(yb, logits)
        grads = tape.gradient(loss_value, model.trainable_variables)
        optimizer.apply_gradients(zip(grads, model.trainable_variables))
    print("epoch", epoch, float(loss_value))
