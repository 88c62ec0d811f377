# tfdist-test: ranks=2 disjoint=yes
"""TF1 Session loop feeding ``to_one_hot(window(labels, step))``: the
labels a step-indexed helper of the script's own cuts (one row at a time,
wrapping around the data), turned one-hot by another function of the script
that reads nothing but the rows it is given. Slicing the arrays by rank
where they are final keeps each rank's windows on its own share, with the
labels of the same rows; the step count is computed from the sliced data,
so each rank runs 1/N of the steps. Before, the wrapped labels were hand
work: every rank fed the same rows."""
import numpy as np
import tensorflow.compat.v1 as tf

tf.disable_v2_behavior()
BATCH = 16
N_CLASSES = 3


def label_of(sample):
    import numpy as np
    return np.eye(3, dtype=np.float32)[int(sample[2] * 1000) % 3]


def window(data, step, batch_size):
    shape = list(data.shape)
    shape[0] = batch_size
    out = np.empty(shape)
    for i in range(batch_size):
        out[i] = data[((step - 1) * batch_size + i) % len(data)]
    return out


def to_one_hot(classes):
    classes = classes.reshape(len(classes))
    return np.eye(N_CLASSES, dtype=np.float32)[np.array(classes, dtype=np.int32)]


rng = np.random.RandomState(4)
X_train = rng.rand(384, 6).astype(np.float32)
y_train = np.array([[int(s[2] * 1000) % 3] for s in X_train])
n_train = len(X_train)
iterations = n_train * 2

tf.set_random_seed(3)
x = tf.placeholder(tf.float32, [None, 6])
y = tf.placeholder(tf.float32, [None, N_CLASSES])
logits = tf.layers.dense(x, N_CLASSES)
cost = tf.reduce_mean(tf.nn.softmax_cross_entropy_with_logits_v2(labels=y, logits=logits))
optimizer = tf.train.AdamOptimizer(0.01).minimize(cost)

sess = tf.Session()
sess.run(tf.global_variables_initializer())
step = 1
while step * BATCH <= iterations:
    batch_xs = window(X_train, step, BATCH)
    batch_ys = to_one_hot(window(y_train, step, BATCH))
    _, loss = sess.run([optimizer, cost], feed_dict={x: batch_xs, y: batch_ys})
    step += 1
print("loss", loss)
