"""A tf.function training step of the batch, called in a loop over a tf.data dataset."""
import numpy as np
import os
# tf.distribute (parameter servers): Keras 3 does not support ParameterServerStrategy (keras-team/keras#18624); use tf-keras there.
import importlib.util
if "TF_CONFIG" in os.environ and importlib.util.find_spec("tf_keras") is not None:
    os.environ.setdefault("TF_USE_LEGACY_KERAS", "1")
import tensorflow as tf

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


# tf.distribute (parameter servers): the chief's coordinator, which schedules each step on a free worker (none without the strategy).
coordinator = (tf.distribute.experimental.coordinator.ClusterCoordinator(strategy)
    if isinstance(strategy, tf.distribute.experimental.ParameterServerStrategy) else None)


# tf.distribute (parameter servers): a step's result, computed on a worker: read (fetched) where the script uses it, so the steps before run without waiting.
class ScheduledValue:
    def __init__(self, remote, value=None):
        self.remote, self.value = remote, value

    def numpy(self):
        return self.remote.fetch() if self.remote is not None else self.value

    def __array__(self, dtype=None, copy=None):
        import numpy
        return numpy.asarray(self.numpy(), dtype=dtype)

    def __float__(self):
        return float(self.numpy())

    def __int__(self):
        return int(self.numpy())

    def __format__(self, spec):
        return format(self.numpy(), spec)

    def __repr__(self):
        return repr(self.numpy())

    def __iter__(self):  # loss, accuracy = step(...)
        return iter([ScheduledValue(None, part) for part in self.numpy()])

    def __getitem__(self, key):
        return ScheduledValue(None, self.numpy()[key])

    def __bool__(self):
        return bool(self.numpy())

    def __getattr__(self, name):
        return getattr(self.numpy(), name)


for _op in ("add", "sub", "mul", "truediv", "floordiv", "pow", "lt", "le", "gt", "ge", "eq", "ne"):
    setattr(ScheduledValue, f"__{_op}__", lambda self, other, _op=_op: getattr(self.numpy(), f"__{_op}__")(other))
    setattr(ScheduledValue, f"__r{_op}__", lambda self, other, _op=_op: getattr(self.numpy(), f"__r{_op}__")(other))
tf.register_tensor_conversion_function(
    ScheduledValue, lambda value, dtype=None, name=None, as_ref=False: tf.convert_to_tensor(value.numpy(), dtype=dtype))


# tf.distribute (parameter servers): part index of the batch a worker reads next from its own copy of a dataset (the whole batch when index is None).
class ScheduledBatch:
    def __init__(self, iterator, index):
        self.iterator, self.index = iterator, index


# tf.distribute (parameter servers): one pass over a dataset schedules its number of batches as steps; each worker reads its own copy of the dataset, repeated (its own shuffle), and the pass ends when every step scheduled has run. Without the strategy: the dataset's batches.
def scheduled_batches(dataset):
    if coordinator is None:
        yield from dataset
        return
    made = scheduled_batches.__dict__.setdefault("made", {})
    if id(dataset) not in made:
        per_worker = coordinator.create_per_worker_dataset(dataset.repeat())
        made[id(dataset)] = dataset, iter(per_worker), int(dataset.cardinality())
    _, iterator, steps = made[id(dataset)]
    if steps < 0:
        raise SystemExit("a training loop under ParameterServerStrategy runs the dataset's number of batches in each pass, and TensorFlow does not know this dataset's size: give the loop a dataset of known size (no repeat(), no filter())")
    spec = dataset.element_spec
    for _ in range(steps):
        yield (tuple(ScheduledBatch(iterator, i) for i in range(len(spec))) if isinstance(spec, tuple)
            else ScheduledBatch(iterator, None))
    coordinator.join()


# tf.distribute (parameter servers): the step, scheduled on whichever worker is free, on the batch that worker reads next; its result is read when used. Without the strategy: the step, called.
def scheduled_step(step, *args):
    if coordinator is None or not args or not all(isinstance(arg, ScheduledBatch) for arg in args):
        return step(*args)
    functions = scheduled_step.__dict__.setdefault("functions", {})
    key = (step, tuple(arg.index for arg in args))
    if key not in functions:
        positions = key[1]

        @tf.function
        def run(iterator):
            batch = next(iterator)
            return strategy.run(step, args=tuple(batch if i is None else batch[i] for i in positions))
        functions[key] = run
    return ScheduledValue(coordinator.schedule(functions[key], args=(args[0].iterator,)))


rng = np.random.RandomState(0)
x = rng.randn(1024, 8).astype("float32")
y = (x @ rng.randn(8, 1) + 0.1 * rng.randn(1024, 1)).astype("float32")
dataset = tf.data.Dataset.from_tensor_slices((x, y)).shuffle(1024).batch(32)
with strategy.scope():
    model = tf.keras.Sequential([tf.keras.Input((8,)), tf.keras.layers.Dense(16, activation="relu"), tf.keras.layers.Dense(1)])
    optimizer = tf.keras.optimizers.Adam(0.01)
loss_fn = tf.keras.losses.MeanSquaredError(reduction="none")


@tf.function
def train_step(xb, yb):
    with tf.GradientTape() as tape:
        loss = tf.reduce_mean(loss_fn(yb, model(xb, training=True)))
    grads = tape.gradient(loss, model.trainable_variables)
    optimizer.apply_gradients(zip(grads, model.trainable_variables))
    return loss


for epoch in range(4):
    total, steps = 0.0, 0
    for xb, yb in scheduled_batches(dataset):
        loss = scheduled_step(train_step, xb, yb)
        total += float(loss)
        steps += 1
    print(f"epoch {epoch}: loss {total / steps:.4f}")
model.save_weights("final.weights.h5")
