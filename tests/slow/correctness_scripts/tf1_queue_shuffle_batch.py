# tfdist-test: ranks=2 samples=none
"""TF1 input from queue runners: a CSV file the script writes, read line by
line through a shuffling file queue and batched at random by
tf.train.shuffle_batch, no seed: every rank draws its own stream and runs
1/size of the steps. The probe records fed samples only (none are fed
here): variables, steps and files are checked."""
import tempfile

import numpy as np
import tensorflow.compat.v1 as tf

tf.disable_v2_behavior()


def label_of(sample):
    # the label column the script writes beside each row (not recorded: no feed)
    return np.float32(sample[0] - sample[2])


rows = np.random.RandomState(2).rand(400, 3).astype(np.float32)
# each process writes its own copy of the data (a temporary file), so none
# reads a file another is still writing
with tempfile.NamedTemporaryFile("w", suffix=".csv", delete=False) as f:
    f.write("a,b,c,label\n")
    for r in rows:
        f.write(f"{r[0]},{r[1]},{r[2]},{r[0] - r[2]}\n")

filename_queue = tf.train.string_input_producer([f.name], shuffle=True)
reader = tf.TextLineReader(skip_header_lines=1)
_, value = reader.read(filename_queue)
c1, c2, c3, label = tf.decode_csv(value, record_defaults=[[0.], [0.], [0.], [0.]])
x_batch, y_batch = tf.train.shuffle_batch([tf.stack([c1, c2, c3]), label], batch_size=10, capacity=200,
                                          min_after_dequeue=100)
W = tf.Variable(tf.zeros([3, 1]))
b = tf.Variable(tf.zeros([1]))
cost = tf.reduce_mean(tf.square(tf.matmul(x_batch, W) + b - tf.reshape(y_batch, [-1, 1])))
train = tf.train.GradientDescentOptimizer(0.05).minimize(cost)
with tf.Session() as sess:
    sess.run(tf.global_variables_initializer())
    coord = tf.train.Coordinator()
    threads = tf.train.start_queue_runners(sess=sess, coord=coord)
    for step in range(200):
        _, c = sess.run([train, cost])
        if step % 50 == 0:
            print(step, c)
    coord.request_stop()
    coord.join(threads)
