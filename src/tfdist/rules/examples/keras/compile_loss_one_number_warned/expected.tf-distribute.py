"""A regression whose loss function averages the errors itself: compile(loss=fn)
with fn returning one number."""
import numpy as np
import tensorflow as tf
import os
import keras

# tf.distribute: one worker of the cluster TF_CONFIG describes, else every local device.
strategy = (tf.distribute.MultiWorkerMirroredStrategy() if "TF_CONFIG" in os.environ
            else tf.distribute.MirroredStrategy())
# tf.distribute: Keras 3 fit() hands the strategy's reduce a nested batch (only to build the model from its shapes), which fails when the replicas' parts differ in size, and scalar metrics along axis 0, which MultiWorkerMirroredStrategy rejects (keras-team/keras#20585): answer the first with this replica's part, reduce the others as MirroredStrategy does.
def reduce_for_keras3(reduce):
    def reduce_each(reduce_op, value, axis):
        if axis is None and tf.nest.is_nested(value):
            return tf.nest.map_structure(lambda v: strategy.experimental_local_results(v)[0], value)
        local = strategy.experimental_local_results(value)[0]
        if axis is not None and "TF_CONFIG" in os.environ and getattr(getattr(local, "shape", None), "rank", None) == 0:
            return reduce(reduce_op, value, axis=None)
        return reduce(reduce_op, value, axis)
    return reduce_each
if int(keras.__version__.split(".")[0]) >= 3:
    strategy.reduce = reduce_for_keras3(strategy.reduce)


def mean_abs_loss(y_true, y_pred):
    return tf.reduce_mean(tf.abs(y_true - y_pred))


rng = np.random.default_rng(0)
x = rng.random((64, 4)).astype("float32")
y = (x @ np.array([1.0, -2.0, 3.0, 0.5], "float32"))[:, None]
with strategy.scope():
    model = keras.Sequential([keras.Input((4,)), keras.layers.Dense(1, kernel_initializer="zeros")])
    model.compile(optimizer=keras.optimizers.SGD(0.01 * strategy.num_replicas_in_sync), loss=mean_abs_loss)
evaluate_result = model.evaluate(x, y, batch_size=16, verbose=0)
if strategy.extended.should_checkpoint:
    print("loss before training (evaluate):", evaluate_result)
history = model.fit(x, y, batch_size=16 * strategy.num_replicas_in_sync, epochs=1, verbose=0, shuffle=False)
if strategy.extended.should_checkpoint:
    print("loss logged by fit:", history.history["loss"][0])
print("kernel after 1 epoch:", model.layers[0].kernel.numpy().ravel().round(4).tolist())
