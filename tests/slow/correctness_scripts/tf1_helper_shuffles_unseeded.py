# tfdist-test: ranks=2 disjoint=yes split=random
"""TF1 Session script whose data helper shuffles the rows with NumPy's
global generator (no seed) and splits off a test set: each process would
shuffle its own way, so the rank shares sliced from it would overlap and
hold rows other ranks hold out. Trained by offsets, an epoch loop around."""
import numpy as np
import tensorflow.compat.v1 as tf

tf.disable_v2_behavior()

BATCH, EPOCHS = 32, 2


def label_of(sample):
    return np.float32(2.0 * sample[1] - sample[3])


def get_data():
    rows = np.random.RandomState(11).rand(704, 4)
    data = np.concatenate([rows, (2.0 * rows[:, 1] - rows[:, 3])[:, None]], axis=1).astype(np.float32)
    np.random.shuffle(data)
    X, Y = data[:, :4], data[:, 4]
    return X[:-64], Y[:-64], X[-64:], Y[-64:]


Xtrain, Ytrain, Xtest, Ytest = get_data()
n_batches = len(Xtrain) // BATCH

x = tf.placeholder(tf.float32, [None, 4])
y = tf.placeholder(tf.float32, [None])
w = tf.Variable(tf.zeros([4, 1]))
pred = tf.squeeze(tf.matmul(x, w), axis=1)
loss = tf.reduce_mean(tf.square(pred - y))
train_op = tf.train.GradientDescentOptimizer(0.05).minimize(loss)

with tf.Session() as sess:
    sess.run(tf.global_variables_initializer())
    for epoch in range(EPOCHS):
        for j in range(n_batches):
            sess.run(train_op, feed_dict={x: Xtrain[j * BATCH:(j + 1) * BATCH], y: Ytrain[j * BATCH:(j + 1) * BATCH]})
        print("epoch", epoch, "test loss", sess.run(loss, feed_dict={x: Xtest, y: Ytest}))
