# tfdist-test: disjoint=yes coverage=0.9
"""TF1 batches cut by zip(range(0, len(trX), B), range(B, len(trX) + 1, B))
over the training arrays, after a reshape of the samples."""
import numpy as np
import tensorflow as tf

tf.compat.v1.disable_eager_execution()


def label_of(sample):
    return np.eye(4, dtype=np.float32)[int(sample.reshape(-1)[0] * 1000) % 4]


def init_weights(shape):
    return tf.Variable(tf.random.normal(shape, stddev=0.01))


tf.compat.v1.set_random_seed(26)
trX = np.random.RandomState(0).rand(480, 64).astype(np.float32)
trY = np.eye(4, dtype=np.float32)[(trX[:, 0] * 1000).astype(np.int64) % 4]
trX = trX.reshape(-1, 8, 8)

X = tf.compat.v1.placeholder("float", [None, 8, 8])
Y = tf.compat.v1.placeholder("float", [None, 4])
w = init_weights([64, 4])
py_x = tf.matmul(tf.reshape(X, [-1, 64]), w)
cost = tf.reduce_mean(tf.nn.softmax_cross_entropy_with_logits(logits=py_x, labels=Y))
train_op = tf.compat.v1.train.GradientDescentOptimizer(0.05).minimize(cost)
predict_op = tf.argmax(py_x, 1)

with tf.compat.v1.Session() as sess:
    tf.compat.v1.global_variables_initializer().run()
    for i in range(3):
        for start, end in zip(range(0, len(trX), 40), range(40, len(trX) + 1, 40)):
            sess.run(train_op, feed_dict={X: trX[start:end], Y: trY[start:end]})
        print(i, np.mean(np.argmax(trY, axis=1) == sess.run(predict_op, feed_dict={X: trX})))
