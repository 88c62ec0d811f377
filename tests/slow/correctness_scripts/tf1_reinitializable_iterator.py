# tfdist-test: samples=none
"""TF1 input through a reinitializable iterator
(``tf.compat.v1.data.Iterator.from_structure``) switched to the training
data by ``sess.run(train_init)`` before each epoch and to the test data
before evaluating (the Stanford CS20 logistic-regression shape); each epoch
runs ``while True`` until the iterator ends, inside a ``try`` around the
loop. The training dataset is sharded by rank (equal shares), the test
dataset is not, and the epoch, ending with the rank's share, runs 1/N of
the steps. The probe records no samples for a dataset read inside a graph:
the steps and variables are checked."""
import numpy as np
import tensorflow as tf

tf.compat.v1.disable_eager_execution()


def label_of(sample):
    return np.eye(3, dtype=np.float32)[int(sample[0] * 1000) % 3]


rng = np.random.RandomState(21)
train_x = rng.rand(480, 6).astype(np.float32)
train = (train_x, np.array([label_of(s) for s in train_x]))
test_x = rng.rand(96, 6).astype(np.float32)
test = (test_x, np.array([label_of(s) for s in test_x]))
tf.compat.v1.set_random_seed(3)

train_data = tf.data.Dataset.from_tensor_slices(train)
train_data = train_data.batch(24)
test_data = tf.data.Dataset.from_tensor_slices(test).batch(24)
iterator = tf.compat.v1.data.Iterator.from_structure(tf.compat.v1.data.get_output_types(train_data),
                                                     tf.compat.v1.data.get_output_shapes(train_data))
img, label = iterator.get_next()
train_init = iterator.make_initializer(train_data)
test_init = iterator.make_initializer(test_data)

w = tf.compat.v1.get_variable('weights', shape=(6, 3), initializer=tf.compat.v1.random_normal_initializer(0, 0.01))
b = tf.compat.v1.get_variable('bias', shape=(1, 3), initializer=tf.compat.v1.zeros_initializer())
logits = tf.matmul(img, w) + b
loss = tf.reduce_mean(tf.nn.softmax_cross_entropy_with_logits(logits=logits, labels=label))
optimizer = tf.compat.v1.train.GradientDescentOptimizer(0.1).minimize(loss)
correct = tf.reduce_sum(tf.cast(tf.equal(tf.argmax(logits, 1), tf.argmax(label, 1)), tf.float32))

with tf.compat.v1.Session() as sess:
    sess.run(tf.compat.v1.global_variables_initializer())
    for i in range(3):
        sess.run(train_init)
        total_loss = 0
        n_batches = 0
        try:
            while True:
                _, l = sess.run([optimizer, loss])
                total_loss += l
                n_batches += 1
        except tf.errors.OutOfRangeError:
            pass
        print('Average loss epoch {0}: {1}'.format(i, total_loss / n_batches))
    sess.run(test_init)
    total_correct = 0
    try:
        while True:
            total_correct += sess.run(correct)
    except tf.errors.OutOfRangeError:
        pass
    print('Accuracy {0}'.format(total_correct / 96))
