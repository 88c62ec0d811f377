# tfdist-test: disjoint=yes coverage=0.6 split=random
"""TF1 cookbook shape: the rows are split into train and test at random
(np.random.choice without replacement, no seed), and each step feeds rows
drawn with np.random.choice(len(x_train), size=batch) -- the targets as a
column, y_train[idx].reshape(-1, 1). The split is seeded alike on every
rank, the train arrays are sliced by rank where they are final, and each
rank draws its rows from its own share, 1/N of the steps."""
import numpy as np
import tensorflow as tf

tf.compat.v1.disable_eager_execution()


def label_of(sample):
    return np.array([float(sample[0] * 2.0 - sample[1] + 0.5 * sample[2])], dtype=np.float64)


rng = np.random.RandomState(3)
x_vals = rng.rand(200, 3)
y_vals = x_vals[:, 0] * 2.0 - x_vals[:, 1] + 0.5 * x_vals[:, 2]
train_indices = np.random.choice(len(x_vals), round(len(x_vals) * 0.8), replace=False)
test_indices = np.array(list(set(range(len(x_vals))) - set(train_indices)))
x_vals_train = x_vals[train_indices]
x_vals_test = x_vals[test_indices]
y_vals_train = y_vals[train_indices]
y_vals_test = y_vals[test_indices]

batch_size = 20
x_data = tf.compat.v1.placeholder(shape=[None, 3], dtype=tf.float32)
y_target = tf.compat.v1.placeholder(shape=[None, 1], dtype=tf.float32)
A = tf.Variable(tf.zeros(shape=[3, 1]))
b = tf.Variable(tf.zeros(shape=[1, 1]))
model_output = tf.add(tf.matmul(x_data, A), b)
loss = tf.reduce_mean(tf.square(y_target - model_output))
train_step = tf.compat.v1.train.GradientDescentOptimizer(0.05).minimize(loss)

sess = tf.compat.v1.Session()
sess.run(tf.compat.v1.global_variables_initializer())
for i in range(160):
    rand_index = np.random.choice(len(x_vals_train), size=batch_size)
    rand_x = x_vals_train[rand_index]
    rand_y = y_vals_train[rand_index].reshape(-1, 1)
    sess.run(train_step, feed_dict={x_data: rand_x, y_target: rand_y})
    if (i + 1) % 40 == 0:
        print("Step #" + str(i + 1) + " loss = " + str(sess.run(loss, feed_dict={x_data: rand_x, y_target: rand_y})))
print("test loss", sess.run(loss, feed_dict={x_data: x_vals_test, y_target: y_vals_test.reshape(-1, 1)}))
