"""A model of plain Python classes: each dense layer makes its tf.Variables in __init__, the
sequence holding them makes none (a held-out book's "from scratch" listing), trained by a tape
loop over batches cut from arrays; the model's weights are gathered by a property."""
import numpy as np
import tensorflow as tf
import keras


class ScratchDense:
    def __init__(self, n_in, n_out, activation):
        self.activation = activation
        self.W = tf.Variable(tf.random.uniform((n_in, n_out), minval=-0.1, maxval=0.1))
        self.b = tf.Variable(tf.zeros((n_out,)))

    def __call__(self, x):
        return self.activation(tf.matmul(x, self.W) + self.b)

    @property
    def weights(self):
        return [self.W, self.b]


class ScratchSequential:
    def __init__(self, layers):
        self.layers = layers

    def __call__(self, x):
        for layer in self.layers:
            x = layer(x)
        return x

    @property
    def weights(self):
        return [w for layer in self.layers for w in layer.weights]


rng = np.random.RandomState(0)
x = rng.rand(512, 8).astype("float32")
y = (x[:, :4].sum(axis=1) > x[:, 4:].sum(axis=1)).astype("int64")
model = ScratchSequential([ScratchDense(8, 16, tf.nn.relu), ScratchDense(16, 2, tf.identity)])
optimizer = keras.optimizers.SGD(learning_rate=0.1)


def one_step(model, images, labels):
    with tf.GradientTape() as tape:
        logits = model(images)
        loss = tf.reduce_mean(tf.nn.sparse_softmax_cross_entropy_with_logits(labels, logits))
    gradients = tape.gradient(loss, model.weights)
    optimizer.apply_gradients(zip(gradients, model.weights))
    return loss


batch_size = 32
for epoch in range(5):
    for start in range(0, len(x), batch_size):
        images, labels = x[start:start + batch_size], y[start:start + batch_size]
        loss = one_step(model, images, labels)
    print("epoch", epoch, "loss", float(loss))
