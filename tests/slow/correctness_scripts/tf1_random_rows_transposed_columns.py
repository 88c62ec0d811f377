# tfdist-test: disjoint=no coverage=0.6
"""TF1 cookbook shape: NumPy seeded once at the top, a random train/test
split, then each step draws rows with np.random.choice and feeds them as
columns, np.transpose([x_vals_train[rand_index]]). The draw is NumPy's
global stream: each rank is re-seeded by rank before the loop and runs 1/N
of the steps (without that, the user's seed gives every rank the same
rows)."""
import numpy as np
import tensorflow as tf

tf.compat.v1.disable_eager_execution()
np.random.seed(11)


def label_of(sample):
    return np.array([float(sample[0]) * 3.0 - 1.0], dtype=np.float64)


x_vals = np.linspace(-1.0, 1.0, 160)
y_vals = x_vals * 3.0 - 1.0
train_indices = np.random.choice(len(x_vals), round(len(x_vals) * 0.8), replace=False)
test_indices = np.array(list(set(range(len(x_vals))) - set(train_indices)))
x_vals_train = x_vals[train_indices]
y_vals_train = y_vals[train_indices]
x_vals_test = x_vals[test_indices]
y_vals_test = y_vals[test_indices]

batch_size = 16
x_data = tf.compat.v1.placeholder(shape=[None, 1], dtype=tf.float32)
y_target = tf.compat.v1.placeholder(shape=[None, 1], dtype=tf.float32)
A = tf.Variable(tf.zeros(shape=[1, 1]))
b = tf.Variable(tf.zeros(shape=[1, 1]))
model_output = tf.add(tf.matmul(x_data, A), b)
loss = tf.reduce_mean(tf.square(y_target - model_output))
train_step = tf.compat.v1.train.GradientDescentOptimizer(0.05).minimize(loss)

sess = tf.compat.v1.Session()
sess.run(tf.compat.v1.global_variables_initializer())
for i in range(120):
    rand_index = np.random.choice(len(x_vals_train), size=batch_size)
    rand_x = np.transpose([x_vals_train[rand_index]])
    rand_y = np.transpose([y_vals_train[rand_index]])
    sess.run(train_step, feed_dict={x_data: rand_x, y_target: rand_y})
print("test loss", sess.run(loss, feed_dict={x_data: np.transpose([x_vals_test]), y_target: np.transpose([y_vals_test])}))
