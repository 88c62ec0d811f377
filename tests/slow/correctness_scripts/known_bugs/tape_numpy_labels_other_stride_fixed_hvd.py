"""correctness_scripts/tape_numpy_offsets_epochs.py converted correctly, by
hand (the text tfdist writes, without the GPU pinning): samples and labels
are divided with the same stride, so every rank feeds its own 1/size of the
samples, each with its own label."""
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
# Horovod: each rank trains on its own equal share of the samples.
x_train = x_train[hvd.rank()::hvd.size()][:len(x_train) // hvd.size()]
y_train = y_train[hvd.rank()::hvd.size()][:len(y_train) // hvd.size()]
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
