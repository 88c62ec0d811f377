# tfdist-test: ranks=2 disjoint=no coverage=0.5
"""Two optimizers, one per group of layers, applied in turn within each step
by a loop over the pairs written out, on batches a helper of the script's
own draws with NumPy's global generator (the handson-ml shape). Horovod:
both rates scaled, NumPy seeded by rank, 1/N of the steps. tf.distribute:
every replica draws its own batch, the pairs loop runs inside the step,
the model and both optimizers are built in the scope, ``del tape`` moves
into the step. Rows are drawn with replacement, so shares may overlap."""
import numpy as np
import tensorflow as tf


def label_of(sample):
    return np.array([sample[:4].sum() > 2.0], dtype=np.float32)


tf.keras.utils.set_random_seed(7)
np.random.seed(7)
X_train = np.random.rand(96, 8).astype(np.float32)
y_train = (X_train[:, :4].sum(axis=1, keepdims=True) > 2).astype(np.float32)
model = tf.keras.Sequential([tf.keras.layers.Dense(16, activation="relu"),
                             tf.keras.layers.Dense(1, activation="sigmoid")])
model.build((None, 8))
lower_layers = model.layers[:1]
upper_layers = model.layers[1:]
lower_optimizer = tf.keras.optimizers.SGD(learning_rate=0.05)
upper_optimizer = tf.keras.optimizers.Adam(learning_rate=0.01)
loss_fn = tf.keras.losses.binary_crossentropy
batch_size = 24
n_steps = len(X_train) // batch_size


def random_batch(X, y, batch_size=24):
    idx = np.random.randint(len(X), size=batch_size)
    return X[idx], y[idx]


for epoch in range(1, 9):
    for step in range(1, n_steps + 1):
        X_batch, y_batch = random_batch(X_train, y_train)
        with tf.GradientTape(persistent=True) as tape:
            y_pred = model(X_batch)
            loss = tf.reduce_mean(loss_fn(y_batch, y_pred))
        for layers, optimizer in ((lower_layers, lower_optimizer), (upper_layers, upper_optimizer)):
            variables = [v for layer in layers for v in layer.trainable_variables]
            gradients = tape.gradient(loss, variables)
            optimizer.apply_gradients(zip(gradients, variables))
        del tape
    print("epoch", epoch, float(loss))
