# tfdist-test: disjoint=yes coverage=0.9
"""Two networks built by one class and kept in a list (``nets = [NN(),
NN(batch_normalization=True)]``), their train ops held as attributes and
run together, ``sess.run([nets[0].train, nets[1].train], feed)`` (the
MorvanZhou batch-normalisation tutorial's shape). tfdist follows
``nets[0]`` to the class through the list, so it sees the train ops: the
array the batches are cut from is sliced by rank where it is final, and the
step loop, counted from the sliced array, runs 1/N of the steps."""
import numpy as np
import tensorflow as tf

tf.compat.v1.disable_eager_execution()


def label_of(sample):
    return np.array([np.float32(sample[0] * 2.0 - 1.0)], dtype=np.float32)


BATCH_SIZE = 20
rng = np.random.RandomState(9)
x = rng.rand(240, 1).astype(np.float32)
y = np.array([label_of(s) for s in x], dtype=np.float32)
train_data = np.hstack((x, y))
tf.compat.v1.set_random_seed(4)

tf_x = tf.compat.v1.placeholder(tf.float32, [None, 1])
tf_y = tf.compat.v1.placeholder(tf.float32, [None, 1])


class NN(object):
    def __init__(self, batch_normalization=False):
        hidden = tf.compat.v1.layers.dense(tf_x, 8, tf.nn.tanh)
        if batch_normalization:
            hidden = hidden * 0.5
        out = tf.compat.v1.layers.dense(hidden, 1)
        self.loss = tf.compat.v1.losses.mean_squared_error(tf_y, out)
        self.train = tf.compat.v1.train.GradientDescentOptimizer(0.05).minimize(self.loss)


nets = [NN(), NN(batch_normalization=True)]
sess = tf.compat.v1.Session()
sess.run(tf.compat.v1.global_variables_initializer())
for epoch in range(2):
    for step in range(len(train_data) // BATCH_SIZE):
        b_x = train_data[step * BATCH_SIZE:(step + 1) * BATCH_SIZE, 0:1]
        b_y = train_data[step * BATCH_SIZE:(step + 1) * BATCH_SIZE, 1:2]
        sess.run([nets[0].train, nets[1].train], {tf_x: b_x, tf_y: b_y})
    print('epoch', epoch, sess.run([nets[0].loss, nets[1].loss], {tf_x: x, tf_y: y}))
