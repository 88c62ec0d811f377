# tfdist-test: ranks=2 disjoint=yes
"""GradientTape loop numbering its steps from 1 (``for step in range(1,
n_steps + 1)``), each step cutting its batch by the step number. Horovod
slices the arrays and divides the count; tf.distribute runs 1/N of the
steps, every replica cutting the batch of step start + (k - start) * N +
its replica number. Before, tf.distribute refused any range not starting
at 0."""
import numpy as np
import tensorflow as tf


def label_of(sample):
    return np.array([sample[:4].sum() > 2.0], dtype=np.float32)


tf.keras.utils.set_random_seed(11)
rng = np.random.RandomState(42)
X_train = rng.rand(480, 8).astype(np.float32)
y_train = (X_train[:, :4].sum(axis=1, keepdims=True) > 2).astype(np.float32)
model = tf.keras.Sequential([tf.keras.layers.Dense(16, activation="relu"),
                             tf.keras.layers.Dense(1, activation="sigmoid")])
optimizer = tf.keras.optimizers.SGD(learning_rate=0.05)
loss_fn = tf.keras.losses.binary_crossentropy
batch_size = 24
n_steps = len(X_train) // batch_size

for epoch in range(1, 3):
    for step in range(1, n_steps + 1):
        X_batch = X_train[(step - 1) * batch_size:step * batch_size]
        y_batch = y_train[(step - 1) * batch_size:step * batch_size]
        with tf.GradientTape() as tape:
            y_pred = model(X_batch, training=True)
            loss = tf.reduce_mean(loss_fn(y_batch, y_pred))
        gradients = tape.gradient(loss, model.trainable_variables)
        optimizer.apply_gradients(zip(gradients, model.trainable_variables))
    print("epoch", epoch, float(loss))
