"""Train, save the model, and evaluate it as it was saved."""
import numpy as np
import os
# tf.distribute: Keras 3 fit() fails under MultiWorkerMirroredStrategy (keras-team/keras#20585); use tf-keras there.
import importlib.util
if "TF_CONFIG" in os.environ and importlib.util.find_spec("tf_keras") is not None:
    os.environ.setdefault("TF_USE_LEGACY_KERAS", "1")
from tensorflow import keras
import tensorflow as tf

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
if int(getattr(tf.keras, "__version__", "2").split(".")[0]) >= 3:
    strategy.reduce = reduce_for_keras3(strategy.reduce)
# tf.distribute: every worker saves (saving can run collective operations); only the chief writes to the real path, the others to a temporary directory removed at exit, and read back there what they wrote (reading=True).
def worker_path(path, reading=False):
    key = os.path.normpath(str(path))
    written = worker_path.__dict__.setdefault("written", {})
    if reading:  # what this worker wrote there (a file, or files in that directory), else the path
        inside = [os.path.dirname(v) for k, v in written.items() if os.path.dirname(k) == key]
        return written.get(key, inside[-1] if inside else path)
    if strategy.extended.should_checkpoint:
        return path
    if key not in written:
        import atexit, shutil, tempfile
        directory = tempfile.mkdtemp()
        atexit.register(shutil.rmtree, directory, ignore_errors=True)
        written[key] = os.path.join(directory, os.path.basename(key))
    return written[key]

x = np.random.RandomState(0).randn(512, 8).astype("float32")
y = (x.sum(axis=1) > 0).astype("int64")

with strategy.scope():
    model = keras.Sequential([keras.Input((8,)), keras.layers.Dense(16, activation="relu"),
                              keras.layers.Dense(2, activation="softmax")])
    model.compile(optimizer=tf.keras.optimizers.Adam(learning_rate=0.001 * strategy.num_replicas_in_sync), loss="sparse_categorical_crossentropy", metrics=["accuracy"])
model.fit(x, y, batch_size=32 * strategy.num_replicas_in_sync, epochs=3, verbose=1 if strategy.extended.should_checkpoint else 0)
path = "classifier.keras"
model.save(worker_path(path))

restored = keras.models.load_model(worker_path(path, reading=True))
evaluate_result = restored.evaluate(x, y, verbose=0)
if strategy.extended.should_checkpoint:
    print(evaluate_result)
