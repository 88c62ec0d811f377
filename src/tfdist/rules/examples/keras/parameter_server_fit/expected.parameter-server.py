"""A tf-keras embedding model trained by fit() on NumPy arrays."""
import numpy as np
import os
# tf.distribute (parameter servers): Keras 3 does not support ParameterServerStrategy (keras-team/keras#18624); use tf-keras there.
import importlib.util
if "TF_CONFIG" in os.environ and importlib.util.find_spec("tf_keras") is not None:
    os.environ.setdefault("TF_USE_LEGACY_KERAS", "1")
import tensorflow as tf
from tensorflow import keras

# tf.distribute (parameter servers): under TF_CONFIG a worker or parameter-server task serves the cluster until it is stopped; the chief coordinates the training, variables of at least 262144 bytes split across the parameter servers. Without TF_CONFIG: one machine, as before.
def parameter_server_strategy():
    if "TF_CONFIG" not in os.environ:
        return tf.distribute.get_strategy()
    cluster_resolver = tf.distribute.cluster_resolver.TFConfigClusterResolver()
    if cluster_resolver.task_type in ("worker", "ps"):
        server = tf.distribute.Server(
            cluster_resolver.cluster_spec(), job_name=cluster_resolver.task_type,
            task_index=cluster_resolver.task_id, protocol=cluster_resolver.rpc_layer or "grpc", start=True)
        server.join()
    if int(getattr(tf.keras, "__version__", "2").split(".")[0]) >= 3:
        raise SystemExit("Keras 3 does not support ParameterServerStrategy (keras-team/keras#18624): install tf-keras (pip install tf-keras) so that TF_USE_LEGACY_KERAS=1 selects it, or use TensorFlow <= 2.15")
    partitioner = tf.distribute.experimental.partitioners.MinSizePartitioner(
        min_shard_bytes=262144, max_shards=cluster_resolver.cluster_spec().num_tasks("ps"))
    return tf.distribute.experimental.ParameterServerStrategy(cluster_resolver, variable_partitioner=partitioner)


strategy = parameter_server_strategy()


# tf.distribute (parameter servers): fit() reads a dataset every worker makes for itself, repeated, each step one batch of it (arrays: shuffled with a seed each worker draws); an epoch is the original's number of steps (of all workers together). Without the strategy, fit() gets its arguments as written.
def parameter_server_data(x, y=None, batch_size=None, shuffle=True, steps_per_epoch=None):
    if not isinstance(strategy, tf.distribute.experimental.ParameterServerStrategy):
        return dict(x=x, y=y, batch_size=batch_size, shuffle=shuffle, steps_per_epoch=steps_per_epoch)
    if isinstance(x, tf.data.Dataset):  # built again on every worker from its definition
        steps = steps_per_epoch or int(x.cardinality())
        if steps < 0:
            raise SystemExit("fit() under ParameterServerStrategy needs the number of batches in one epoch, and TensorFlow does not know this dataset's size: give fit() steps_per_epoch=<batches in one epoch>")
        return dict(x=x.repeat(), steps_per_epoch=steps)
    arrays = tuple(x) if isinstance(x, list) else x
    arrays = arrays if y is None else (arrays, y)
    size = len(tf.nest.flatten(arrays)[0])
    batch_size = batch_size or 32

    def dataset_fn(input_context):
        dataset = tf.data.Dataset.from_tensor_slices(arrays)
        dataset = dataset.shard(input_context.num_input_pipelines, input_context.input_pipeline_id)
        if shuffle:  # a seed drawn on each worker: a global tf.random seed would give them one order
            seed = tf.cast(tf.timestamp() * 1e6, tf.int64) % (2 ** 31 - 1)
            dataset = dataset.shuffle(size, seed=seed, reshuffle_each_iteration=True)
        return dataset.batch(input_context.get_per_replica_batch_size(batch_size)).repeat().prefetch(2)
    return dict(x=tf.keras.utils.experimental.DatasetCreator(dataset_fn),
                steps_per_epoch=steps_per_epoch or -(-size // batch_size))


VOCAB = 5000
EPOCHS = 3

rng = np.random.RandomState(0)
x_train = rng.randint(0, VOCAB, size=(1280, 8))
y_train = ((x_train < VOCAB // 2).sum(axis=1) > 4).astype("float32")

with strategy.scope():
    model = keras.Sequential([
        keras.layers.Embedding(VOCAB, 32),
        keras.layers.GlobalAveragePooling1D(),
        keras.layers.Dense(1, activation="sigmoid"),
    ])
    optimizer = keras.optimizers.Adam(learning_rate=0.01)
    model.compile(optimizer=optimizer, loss="binary_crossentropy", steps_per_execution=10)

history = model.fit(**parameter_server_data(x_train, y_train, batch_size=32), epochs=EPOCHS, verbose=2)
print(f"final loss {history.history['loss'][-1]:.4f}")
model.save_weights("model.weights.h5")
