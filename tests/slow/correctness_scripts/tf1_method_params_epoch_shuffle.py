# tfdist-test: ranks=2 disjoint=yes
"""TF1 model class whose fit(self, X, Y) method takes the arrays as
parameters, converts them, counts its batches from their shape and
reorders them (with their labels) at every epoch before cutting batches
by offset: divided at the method's entry, the batch count then per rank."""
import numpy as np
import tensorflow.compat.v1 as tf

tf.disable_v2_behavior()


def label_of(sample):
    return np.int32(sample[0] + sample[2] > 1.0)


def load():
    rng = np.random.RandomState(3)
    inputs = rng.rand(640, 4)
    return inputs, (inputs[:, 0] + inputs[:, 2] > 1.0).astype(np.int64)


class LogisticModel(object):
    def __init__(self, n_classes):
        self.n_classes = n_classes

    def fit(self, X, Y, learning_rate=0.1, epochs=2, batch_sz=32):
        X = X.astype(np.float32)
        Y = Y.astype(np.int32)
        N, D = X.shape
        tfX = tf.placeholder(tf.float32, shape=(None, D))
        tfY = tf.placeholder(tf.int32, shape=(None,))
        W = tf.Variable(tf.zeros((D, self.n_classes)))
        b = tf.Variable(tf.zeros((self.n_classes,)))
        logits = tf.matmul(tfX, W) + b
        cost = tf.reduce_mean(tf.nn.sparse_softmax_cross_entropy_with_logits(logits=logits, labels=tfY))
        train_op = tf.train.GradientDescentOptimizer(learning_rate).minimize(cost)
        self.session.run(tf.global_variables_initializer())
        n_batches = N // batch_sz
        for i in range(epochs):
            perm = np.random.permutation(N)
            X = X[perm]
            Y = Y[perm]
            for j in range(n_batches):
                Xbatch = X[j * batch_sz:(j * batch_sz + batch_sz)]
                Ybatch = Y[j * batch_sz:(j * batch_sz + batch_sz)]
                c, _ = self.session.run([cost, train_op], feed_dict={tfX: Xbatch, tfY: Ybatch})
            print("epoch", i, "cost", c)


def main():
    X, Y = load()
    model = LogisticModel(2)
    model.session = tf.Session()
    model.fit(X, Y)


if __name__ == "__main__":
    main()
