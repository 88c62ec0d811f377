"""tf.distribute with parameter servers: ``ParameterServerStrategy``
(``tfdist convert --backend tf-distribute --strategy parameter-server``).

The other architecture of distributed training: the variables live on the
parameter servers (large ones split across them by a ``variable_partitioner``),
workers compute steps asynchronously, and one process, the chief (the
coordinator), runs the script and schedules the steps. Following
https://www.tensorflow.org/tutorials/distribute/parameter_server_training:

- one converted script serves every task: under ``TF_CONFIG`` a ``worker`` or
  ``ps`` task starts its ``tf.distribute.Server`` and joins it (it never runs
  the rest of the script); the chief builds the strategy and trains. Without
  ``TF_CONFIG`` the strategy is the default one: the script trains as
  before, on one machine;
- Keras 3 does not support ParameterServerStrategy (keras-team/keras#18624):
  tf-keras is selected before TensorFlow is imported where it is installed
  (what the mirrored backend does for multi-worker ``fit``), and the chief
  stops with the reason where tf.keras is still Keras 3;
- tf-keras ``fit`` needs its input as a per-worker dataset function and its
  epoch length given (``steps_per_epoch``): arrays become a
  ``DatasetCreator`` whose dataset every worker repeats, shuffled with a seed
  of its own; the coordinator schedules the original's number of steps per
  epoch on whichever worker is free;
- the learning rate and the batch are kept as written: each step is one
  worker's batch, applied by itself (asynchronous training);
- only the chief runs the script's body, so printing, callbacks and saving
  stay as they are.
"""
from __future__ import annotations

from typing import Dict, List, Optional, Tuple

from .tf_distribute import TfDistributeBackend

#: MinSizePartitioner's own default: a variable is split into shards of at
#: least this many bytes, at most one per parameter server.
DEFAULT_MIN_SHARD_BYTES = 256 << 10
KERAS3_REFUSAL = (
    "Keras 3 does not support ParameterServerStrategy (keras-team/keras#18624, answered by its author): "
    "train with tf-keras (pip install tf-keras)")
KERAS3_STOP = (
    "Keras 3 does not support ParameterServerStrategy (keras-team/keras#18624): install tf-keras "
    "(pip install tf-keras) so that TF_USE_LEGACY_KERAS=1 selects it, or use TensorFlow <= 2.15")
TAPE_REFUSAL = (
    "a GradientTape training loop under ParameterServerStrategy is not converted yet (its step would run "
    "where a ClusterCoordinator schedules it: coordinator.schedule(step, args=(per_worker_iterator,)) over "
    "coordinator.create_per_worker_dataset(...), coordinator.join() each epoch, losses read with .fetch()): "
    "convert it with --strategy mirrored (MultiWorkerMirroredStrategy), or with --backend horovod")
DATASET_STOP = (
    "fit() under ParameterServerStrategy needs the number of batches in one epoch, and TensorFlow does not know "
    "this dataset's size: give fit() steps_per_epoch=<batches in one epoch>")
_NAMES = {"ps_strategy": "parameter_server_strategy", "fit_data": "parameter_server_data"}


def _strategy_statements(q, min_shard_bytes: int) -> List[Tuple[str, str]]:
    keras_version = f"getattr({{tf}}.keras, {q('__version__')}, {q('2')})"
    return [(
        f"def {{ps_strategy}}():\n"
        f"    if {q('TF_CONFIG')} not in {{os}}.environ:\n"
        f"        return {{tf}}.distribute.get_strategy()\n"
        f"    cluster_resolver = {{tf}}.distribute.cluster_resolver.TFConfigClusterResolver()\n"
        f"    if cluster_resolver.task_type in ({q('worker')}, {q('ps')}):\n"
        f"        server = {{tf}}.distribute.Server(\n"
        f"            cluster_resolver.cluster_spec(), job_name=cluster_resolver.task_type,\n"
        f"            task_index=cluster_resolver.task_id, protocol=cluster_resolver.rpc_layer or {q('grpc')}, start=True)\n"
        f"        server.join()\n"
        f"    if int({keras_version}.split({q('.')})[0]) >= 3:\n"
        f"        raise SystemExit({q(KERAS3_STOP)})\n"
        f"    partitioner = {{tf}}.distribute.experimental.partitioners.MinSizePartitioner(\n"
        f"        min_shard_bytes={min_shard_bytes}, max_shards=cluster_resolver.cluster_spec().num_tasks({q('ps')}))\n"
        f"    return {{tf}}.distribute.experimental.ParameterServerStrategy(cluster_resolver, "
        f"variable_partitioner=partitioner)\n"
        f"\n"
        f"\n"
        f"{{strategy}} = {{ps_strategy}}()",
        "tf.distribute (parameter servers): under TF_CONFIG a worker or parameter-server task serves the "
        "cluster until it is stopped; the chief coordinates the training, variables of at least "
        f"{min_shard_bytes} bytes split across the parameter servers. Without TF_CONFIG: one machine, as before.",
    )]


def _fit_data_helper(q) -> Tuple[str, str]:
    return (
        f"def {{fit_data}}(x, y=None, batch_size=None, shuffle=True, steps_per_epoch=None):\n"
        f"    if not isinstance({{strategy}}, {{tf}}.distribute.experimental.ParameterServerStrategy):\n"
        f"        return dict(x=x, y=y, batch_size=batch_size, shuffle=shuffle, steps_per_epoch=steps_per_epoch)\n"
        f"    if isinstance(x, {{tf}}.data.Dataset):  # built again on every worker from its definition\n"
        f"        steps = steps_per_epoch or int(x.cardinality())\n"
        f"        if steps < 0:\n"
        f"            raise SystemExit({q(DATASET_STOP)})\n"
        f"        return dict(x=x.repeat(), steps_per_epoch=steps)\n"
        f"    arrays = tuple(x) if isinstance(x, list) else x\n"
        f"    arrays = arrays if y is None else (arrays, y)\n"
        f"    size = len({{tf}}.nest.flatten(arrays)[0])\n"
        f"    batch_size = batch_size or 32\n"
        f"\n"
        f"    def dataset_fn(input_context):\n"
        f"        dataset = {{tf}}.data.Dataset.from_tensor_slices(arrays)\n"
        f"        dataset = dataset.shard(input_context.num_input_pipelines, input_context.input_pipeline_id)\n"
        f"        if shuffle:  # a seed drawn on each worker: a global tf.random seed would give them one order\n"
        f"            seed = {{tf}}.cast({{tf}}.timestamp() * 1e6, {{tf}}.int64) % (2 ** 31 - 1)\n"
        f"            dataset = dataset.shuffle(size, seed=seed, reshuffle_each_iteration=True)\n"
        f"        return dataset.batch(input_context.get_per_replica_batch_size(batch_size)).repeat().prefetch(2)\n"
        f"    return dict(x={{tf}}.keras.utils.experimental.DatasetCreator(dataset_fn),\n"
        f"                steps_per_epoch=steps_per_epoch or -(-size // batch_size))",
        "tf.distribute (parameter servers): fit() reads a dataset every worker makes for itself, repeated, "
        "each step one batch of it (arrays: shuffled with a seed each worker draws); an epoch is the original's "
        "number of steps (of all workers together). Without the strategy, fit() gets its arguments as written.",
    )


class ParameterServerBackend(TfDistributeBackend):
    name = "parameter-server"
    # only the chief runs the script's body: nothing it does waits for the others
    inference_runs_collectives = False
    legacy_keras_reason = ("tf.distribute (parameter servers): Keras 3 does not support ParameterServerStrategy "
                           "(keras-team/keras#18624); use tf-keras there.")

    def __init__(self, min_shard_bytes: Optional[int] = None):
        super().__init__()
        self.min_shard_bytes = DEFAULT_MIN_SHARD_BYTES if min_shard_bytes is None else min_shard_bytes

    def placeholder_names(self) -> Tuple[str, ...]:
        return super().placeholder_names() + tuple(_NAMES)

    def message_words(self) -> Dict[str, str]:
        words = super().message_words()
        words.update({
            "engine": "tf.distribute (parameter servers)",
            "chief": "the chief (the only task that runs the script)",
            "optimizer_wrapper": "strategy.scope()",
            "tape_wrapper": "coordinator.schedule",
            "alternative": ", or convert it with --strategy mirrored",
        })
        return words

    def bind_name(self, ctx, key: str) -> str:
        if key in _NAMES:
            return ctx.imports.free_name(_NAMES[key])
        return super().bind_name(ctx, key)

    def keras3_refusal(self) -> str:
        return KERAS3_REFUSAL

    def tape_refusal(self) -> str:
        """Why a GradientTape loop is refused under this strategy, and what converts it."""
        return TAPE_REFUSAL

    # --- start-up
    def setup(self, ctx, tf2: bool, keras3_guard: bool) -> List:
        return _strategy_statements(ctx.quoted, self.min_shard_bytes)

    # --- what parameter servers need
    def fit_data_definition(self, ctx) -> Tuple[str, str]:
        """(template, comment): the definition of what :meth:`fit_data` calls."""
        return _fit_data_helper(ctx.quoted)

    def fit_data(self, arguments: str) -> str:
        """The keyword arguments of fit() (a mapping, passed as ``**``) for
        its input arguments ``arguments`` (``x, y, batch_size=...``): under
        the strategy a dataset function and the epoch's steps, as written
        without it."""
        return f"{{fit_data}}({arguments})"

    # --- optimisation: each step is one worker's batch, applied by itself
    def scale_lr(self, lr: str):
        return None

    def per_replica_batch(self, batch: str) -> str:
        return batch

    def divide_count(self, count: str) -> str:
        return count
