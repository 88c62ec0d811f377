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
DATASET_STOP = (
    "fit() under ParameterServerStrategy needs the number of batches in one epoch, and TensorFlow does not know "
    "this dataset's size: give fit() steps_per_epoch=<batches in one epoch>")
TAPE_DATASET_STOP = (
    "a training loop under ParameterServerStrategy runs the dataset's number of batches in each pass, and "
    "TensorFlow does not know this dataset's size: give the loop a dataset of known size (no repeat(), no filter())")
_NAMES = {"ps_strategy": "parameter_server_strategy", "fit_data": "parameter_server_data",
          "ps_coordinator": "coordinator", "ps_value": "ScheduledValue", "ps_batch": "ScheduledBatch",
          "ps_batches": "scheduled_batches", "ps_step": "scheduled_step"}


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


def _coordinator_helper(q) -> Tuple[str, str]:
    """The definition of the chief's coordinator (none without the strategy)."""
    pss = "{tf}.distribute.experimental.ParameterServerStrategy"
    return (
        f"{{ps_coordinator}} = ({{tf}}.distribute.experimental.coordinator.ClusterCoordinator({{strategy}})\n"
        f"    if isinstance({{strategy}}, {pss}) else None)",
        "tf.distribute (parameter servers): the chief's coordinator, which schedules each step on a free "
        "worker (none without the strategy).",
    )


def _value_helper(q) -> Tuple[str, str]:
    """The definition of {ps_value}: a step's result, read when used."""
    ops = "(" + ", ".join(q(o) for o in ("add", "sub", "mul", "truediv", "floordiv", "pow", "lt", "le", "gt", "ge",
                                         "eq", "ne")) + ")"
    return (
        f"class {{ps_value}}:\n"
        f"    def __init__(self, remote, value=None):\n"
        f"        self.remote, self.value = remote, value\n"
        f"\n"
        f"    def numpy(self):\n"
        f"        return self.remote.fetch() if self.remote is not None else self.value\n"
        f"\n"
        f"    def __array__(self, dtype=None, copy=None):\n"
        f"        import numpy\n"
        f"        return numpy.asarray(self.numpy(), dtype=dtype)\n"
        f"\n"
        f"    def __float__(self):\n"
        f"        return float(self.numpy())\n"
        f"\n"
        f"    def __int__(self):\n"
        f"        return int(self.numpy())\n"
        f"\n"
        f"    def __format__(self, spec):\n"
        f"        return format(self.numpy(), spec)\n"
        f"\n"
        f"    def __repr__(self):\n"
        f"        return repr(self.numpy())\n"
        f"\n"
        f"    def __iter__(self):  # loss, accuracy = step(...)\n"
        f"        return iter([{{ps_value}}(None, part) for part in self.numpy()])\n"
        f"\n"
        f"    def __getitem__(self, key):\n"
        f"        return {{ps_value}}(None, self.numpy()[key])\n"
        f"\n"
        f"    def __bool__(self):\n"
        f"        return bool(self.numpy())\n"
        f"\n"
        f"    def __getattr__(self, name):\n"
        f"        return getattr(self.numpy(), name)\n"
        f"\n"
        f"\n"
        f"for _op in {ops}:\n"
        f"    setattr({{ps_value}}, f{q('__{_op}__')}, lambda self, other, _op=_op: getattr(self.numpy(), f{q('__{_op}__')})(other))\n"
        f"    setattr({{ps_value}}, f{q('__r{_op}__')}, lambda self, other, _op=_op: getattr(self.numpy(), f{q('__r{_op}__')})(other))\n"
        f"{{tf}}.register_tensor_conversion_function(\n"
        f"    {{ps_value}}, lambda value, dtype=None, name=None, as_ref=False: {{tf}}.convert_to_tensor(value.numpy(), dtype=dtype))",
        "tf.distribute (parameter servers): a step's result, computed on a worker: read (fetched) where the "
        "script uses it, so the steps before run without waiting.",
    )


def _batch_helper(q) -> Tuple[str, str]:
    """The definition of {ps_batch}: part of the batch a worker reads next."""
    return (
        f"class {{ps_batch}}:\n"
        f"    def __init__(self, iterator, index):\n"
        f"        self.iterator, self.index = iterator, index",
        "tf.distribute (parameter servers): part index of the batch a worker reads next from its own copy of a "
        "dataset (the whole batch when index is None).",
    )


def _batches_helper(q) -> Tuple[str, str]:
    """The definition of {ps_batches}: a pass over a dataset as scheduled steps."""
    return (
        f"def {{ps_batches}}(dataset):\n"
        f"    if {{ps_coordinator}} is None:\n"
        f"        yield from dataset\n"
        f"        return\n"
        f"    made = {{ps_batches}}.__dict__.setdefault({q('made')}, {{}})\n"
        f"    if id(dataset) not in made:\n"
        f"        per_worker = {{ps_coordinator}}.create_per_worker_dataset(dataset.repeat())\n"
        f"        made[id(dataset)] = dataset, iter(per_worker), int(dataset.cardinality())\n"
        f"    _, iterator, steps = made[id(dataset)]\n"
        f"    if steps < 0:\n"
        f"        raise SystemExit({q(TAPE_DATASET_STOP)})\n"
        f"    spec = dataset.element_spec\n"
        f"    for _ in range(steps):\n"
        f"        yield (tuple({{ps_batch}}(iterator, i) for i in range(len(spec))) if isinstance(spec, tuple)\n"
        f"               else {{ps_batch}}(iterator, None))\n"
        f"    {{ps_coordinator}}.join()",
        "tf.distribute (parameter servers): one pass over a dataset schedules its number of batches as steps; "
        "each worker reads its own copy of the dataset, repeated (its own shuffle), and the pass ends when "
        "every step scheduled has run. Without the strategy: the dataset's batches.",
    )


def _step_helper(q) -> Tuple[str, str]:
    """The definition of {ps_step}: a step scheduled on a free worker."""
    return (
        f"def {{ps_step}}(step, *args):\n"
        f"    if {{ps_coordinator}} is None or not args or not all(isinstance(arg, {{ps_batch}}) for arg in args):\n"
        f"        return step(*args)\n"
        f"    functions = {{ps_step}}.__dict__.setdefault({q('functions')}, {{}})\n"
        f"    key = (step, tuple(arg.index for arg in args))\n"
        f"    if key not in functions:\n"
        f"        positions = key[1]\n"
        f"\n"
        f"        @{{tf}}.function\n"
        f"        def run(iterator):\n"
        f"            batch = next(iterator)\n"
        f"            return {{strategy}}.run(step, args=tuple(batch if i is None else batch[i] for i in positions))\n"
        f"        functions[key] = run\n"
        f"    return {{ps_value}}({{ps_coordinator}}.schedule(functions[key], args=(args[0].iterator,)))",
        "tf.distribute (parameter servers): the step, scheduled on whichever worker is free, on the batch that "
        "worker reads next; its result is read when used. Without the strategy: the step, called.",
    )


def _tape_helpers(q) -> List[Tuple[str, str]]:
    return [helper(q) for helper in (_coordinator_helper, _value_helper, _batch_helper, _batches_helper, _step_helper)]


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

    # --- start-up
    def pre_import(self, ctx, keras_fit: bool) -> List[Tuple[str, str]]:
        """tf-keras selected before TensorFlow is imported for every script: Keras 3 runs neither fit()
        nor a custom loop under this strategy."""
        return super().pre_import(ctx, keras_fit=True)

    def setup(self, ctx, tf2: bool, keras3_guard: bool) -> List:
        return _strategy_statements(ctx.quoted, self.min_shard_bytes)

    # --- what parameter servers need
    def fit_data_definition(self, ctx) -> Tuple[str, str]:
        """(template, comment): the definition of what :meth:`fit_data` calls."""
        return _fit_data_helper(ctx.quoted)

    def tape_definitions(self, ctx) -> List[Tuple[str, str]]:
        """(template, comment) of each definition :meth:`scheduled_batches` and :meth:`scheduled_step` use."""
        return _tape_helpers(ctx.quoted)

    def scheduled_batches(self, dataset: str) -> str:
        """A loop's dataset, each batch a step the coordinator schedules (the dataset as it is without the strategy)."""
        return f"{{ps_batches}}({dataset})"

    def scheduled_step(self, step: str, args: str) -> str:
        """A step called on the batch of :meth:`scheduled_batches`, scheduled on a worker."""
        return f"{{ps_step}}({step}{', ' + args if args else ''})"

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
