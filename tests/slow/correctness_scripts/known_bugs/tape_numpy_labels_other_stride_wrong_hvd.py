"""correctness_scripts/tape_numpy_offsets_epochs.py converted WRONG, by hand:
the samples are divided by a rank stride (rows rank, rank + size, ...) but
the labels in contiguous blocks (rows rank * n ... rank * n + n - 1), so rank
r feeds the sample of row r + size*i with the label of row r*n + i.  Both
shares have n rows, the loop runs, every rank takes 1/size of the steps and
the gradients are averaged: it exits 0 with identical variables.  Only a
check of the sample/label pairs fed (the probe's tape source) shows it."""
import numpy as np
import tensorflow as tf
import horovod.tensorflow as hvd

# Horovod: initialize Horovod.
hvd.init()


def label_of(sample):
    return np.int64(int(sample[0] * 1000) % 4)


tf.keras.utils.set_random_seed(16)
rng = np.random.RandomState(0)
x_train = rng.rand(480, 8).astype("float32")
y_train = (x_train[:, 0] * 1000).astype("int64") % 4
# WRONG: samples by stride, labels by block.
n = len(x_train) // hvd.size()
x_train = x_train[hvd.rank()::hvd.size()][:n]
y_train = y_train[hvd.rank() * n:(hvd.rank() + 1) * n]
BATCH = 20
steps_per_epoch = len(x_train) // BATCH

model = tf.keras.Sequential([tf.keras.layers.Dense(4, input_shape=(8,))])
opt = tf.keras.optimizers.SGD(0.1 * hvd.size())
loss_fn = tf.keras.losses.SparseCategoricalCrossentropy(from_logits=True)

for epoch in range(2):
    for i in range(steps_per_epoch):
        xb = x_train[i * BATCH:(i + 1) * BATCH]
        yb = y_train[i * BATCH:(i + 1) * BATCH]
        with tf.GradientTape() as tape:
            loss = loss_fn(yb, model(xb, training=True))
        # Horovod: average gradients across ranks.
        tape = hvd.DistributedGradientTape(tape)
        grads = tape.gradient(loss, model.trainable_variables)
        opt.apply_gradients(zip(grads, model.trainable_variables))
        # Horovod: broadcast initial state from rank 0 once, after the first step created the optimizer's slots.
        if opt.iterations == 1:
            hvd.broadcast_variables(model.variables, root_rank=0)
            hvd.broadcast_variables(opt.variables, root_rank=0)
    if hvd.rank() == 0:
        print("epoch", epoch, float(loss))
