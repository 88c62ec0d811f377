"""tf.distribute backend: TensorFlow's own data-parallel engine.

One converted script runs both ways: with ``TF_CONFIG`` set it is one worker
of a cluster (``MultiWorkerMirroredStrategy``), without it it uses every
local device (``MirroredStrategy``). Following
https://www.tensorflow.org/tutorials/distribute/multi_worker_with_keras and
https://www.tensorflow.org/tutorials/distribute/custom_training:

- variables are created in ``strategy.scope()``: mirrored, so every replica
  starts from the same values and no broadcast is needed;
- the optimizer sums the replicas' gradients in ``apply_gradients``; a
  custom step therefore runs through ``strategy.run`` and divides its loss
  by the number of replicas (what ``tf.nn.compute_average_loss`` does for a
  per-replica mean loss), so the applied gradient is the global mean;
- the batch a dataset yields is the *global* batch: the user's batch size is
  kept per replica by multiplying it by ``num_replicas_in_sync``, and the
  strategy splits (auto-shards) the data between workers;
- every worker writes checkpoints and saved models (saving may run
  collective operations): the chief to the user's path, the others to a
  temporary directory removed at exit.
"""
from __future__ import annotations

from typing import Dict, List, Optional, Tuple

from .base import Backend, check_lr_policy, check_steps_per_epoch, check_warmup, scaled_lr

# keras-team/keras#20585: Keras 3 fit() under MultiWorkerMirroredStrategy
# fails; tf-keras (Keras 2) works, selected before TensorFlow is imported.
# A script written for standalone Keras 3 (``import keras``) keeps Keras 3:
# the strategy's reduce is given what Keras 3 asks of it (see setup()).
LEGACY_KERAS_ENV = "TF_USE_LEGACY_KERAS"
KERAS3_MULTI_WORKER_MESSAGE = (
    "Keras 3 model.fit does not run under MultiWorkerMirroredStrategy (keras-team/keras#20585): "
    "use tf.keras with tf-keras installed (pip install tf-keras; TF_USE_LEGACY_KERAS=1)"
)
# Where fit() keeps the state a restarted worker resumes from (every worker
# must reach it: a shared file system across hosts); Keras removes it when
# training ends normally.
BACKUP_DIR = "./backup_and_restore"
TF1_REFUSAL = ("TF1 Session / MonitoredTrainingSession training cannot run under tf.distribute's "
               "strategies: convert it with --backend horovod, or port it to Keras fit or a GradientTape loop")


def _strategy_statement(q) -> Tuple[str, str]:
    """The strategy: the cluster TF_CONFIG describes, else every local device."""
    return (
        f"{{strategy}} = ({{tf}}.distribute.MultiWorkerMirroredStrategy() if {q('TF_CONFIG')} in {{os}}.environ\n"
        f"            else {{tf}}.distribute.MirroredStrategy())",
        "tf.distribute: one worker of the cluster TF_CONFIG describes, else every local device.",
    )


def _keras3_multi_worker_stop(q) -> Tuple[str, str]:
    """Stop where Keras 3 would run multi-worker fit() (keras-team/keras#20585)."""
    keras_version = f"getattr({{tf}}.keras, {q('__version__')}, {q('2')})"
    return (
        f"if {q('TF_CONFIG')} in {{os}}.environ and int({keras_version}.split({q('.')})[0]) >= 3:\n"
        f"    raise SystemExit({q(KERAS3_MULTI_WORKER_MESSAGE)})",
        "tf.distribute: stop rather than train wrong where Keras 3 cannot run multi-worker fit().",
    )


def _run_step_helper(q) -> Tuple[str, str]:
    """The definition of {run_step}: one training step on every replica, its results gathered."""
    return (
        f"def {{run_step}}(step, *args, **kwargs):\n"
        f"    first = hasattr(step, {q('python_function')}) and step not in getattr({{run_step}}, {q('stepped')}, ())\n"
        f"    {{run_step}}.stepped = getattr({{run_step}}, {q('stepped')}, ()) + ((step,) if first else ())\n"
        f"    eager = {{tf}}.config.functions_run_eagerly()\n"
        f"    {{tf}}.config.run_functions_eagerly(eager or first)\n"
        f"    try:\n"
        f"        results = {{strategy}}.run(step, args=args, kwargs=kwargs)\n"
        f"    finally:\n"
        f"        {{tf}}.config.run_functions_eagerly(eager)\n"
        f"    def gather(value):\n"
        f"        if value is None:\n"
        f"            return value\n"
        f"        parts = {{strategy}}.experimental_local_results(value)\n"
        f"        if len(getattr(parts[0], {q('shape')}, ())) == 0:\n"
        f"            return {{strategy}}.reduce({{tf}}.distribute.ReduceOp.MEAN, value, axis=None)\n"
        f"        return {{tf}}.concat(parts, axis=0)\n"
        f"    return {{tf}}.nest.map_structure(gather, results)",
        "tf.distribute: run one training step on every replica; a scalar it returns (a loss) is averaged over "
        "them, any other value (predictions, generated images) is this worker's replicas' rows, as its batch "
        "is; nothing stays nothing. A tf.function step runs its first step eagerly (run_functions_eagerly, "
        "which also holds for a method's bound step): the variables it creates then (a Keras 3 optimizer's "
        "slots) cannot be created inside a traced function on several local replicas.",
    )


def _local_values_helper(q) -> Tuple[str, str]:
    """The definition of {local_values}: this worker's rows of a distributed batch."""
    return (
        f"def {{local_values}}(value):\n"
        f"    return {{tf}}.nest.map_structure(\n"
        f"        lambda v: {{tf}}.concat({{strategy}}.experimental_local_results(v), axis=0), value)",
        "tf.distribute: this worker's part of a distributed batch (its replicas' rows, in order), for code "
        "outside the replica step that reads the batch.",
    )


def _split_stream_helper(q) -> Tuple[str, str]:
    """The definition of {split_stream}: a stream of batches split into steps, one batch per replica."""
    return (
        f"def {{split_stream}}(batches):\n"
        f"    import copy\n"
        f"    group = []\n"
        f"    for batch in batches:\n"
        f"        try:  # copied as it is read: a generator may refill the same arrays for its next batch\n"
        f"            batch = copy.deepcopy(batch)\n"
        f"        except Exception:  # a batch that cannot be copied: kept as it is\n"
        f"            pass\n"
        f"        group.append(batch)\n"
        f"        if len(group) == {{strategy}}.num_replicas_in_sync:\n"
        f"            yield {{strategy}}.experimental_distribute_values_from_function(\n"
        f"                lambda context, group=group: group[context.replica_id_in_sync_group])\n"
        f"            group = []",
        "tf.distribute: every num_replicas_in_sync consecutive batches of a stream make one step, each "
        "replica training on the one at its place (a last, incomplete group is left out).",
    )


def _sequence_batches_helper(q) -> Tuple[str, str]:
    """The definition of {sequence_batches}: a Sequence or generator of batches as a distributed dataset."""
    return (
        f"def {{sequence_batches}}(batches, shuffle=True):\n"
        f"    import itertools, numpy\n"
        f"    epoch, position = [0], [0]\n"
        f"\n"
        f"    def alike(action):\n"
        f"        state = numpy.random.get_state()\n"
        f"        numpy.random.seed(epoch[0])\n"
        f"        try:\n"
        f"            return action()\n"
        f"        finally:\n"
        f"            numpy.random.set_state(state)\n"
        f"\n"
        f"    indexed = hasattr(batches, {q('__getitem__')}) and hasattr(batches, {q('__len__')})\n"
        f"    stream = None if indexed else iter(batches)\n"
        f"    if indexed and hasattr(batches, {q('on_epoch_end')}):\n"
        f"        alike(batches.on_epoch_end)  # its first order too: one drawn in its __init__ differs\n"
        f"    first = alike(lambda: batches[0]) if indexed else next(stream)\n"
        f"    stream = None if indexed else itertools.chain([first], stream)\n"
        f"    spec = {{tf}}.nest.map_structure(\n"
        f"        lambda v: {{tf}}.TensorSpec((None,) + tuple(v.shape[1:]), {{tf}}.as_dtype(v.dtype)), first)\n"
        f"\n"
        f"    def pipeline(context):\n"
        f"        local = context.num_replicas_in_sync // context.num_input_pipelines\n"
        f"        steps = len(batches) // context.num_replicas_in_sync if indexed else 0\n"
        f"\n"
        f"        def read():\n"
        f"            while indexed and steps:\n"
        f"                order = numpy.random.RandomState(epoch[0]).permutation(len(batches)) if shuffle else range(len(batches))\n"
        f"                for step in range(steps):\n"
        f"                    for replica in range(local):\n"
        f"                        yield batches[int(order[(step * context.num_input_pipelines + context.input_pipeline_id) * local + replica])]\n"
        f"                epoch[0] += 1\n"
        f"                if hasattr(batches, {q('on_epoch_end')}):\n"
        f"                    alike(batches.on_epoch_end)\n"
        f"            for batch in stream or ():\n"
        f"                place = position[0] % context.num_replicas_in_sync // local\n"
        f"                position[0] += 1\n"
        f"                if place == context.input_pipeline_id:\n"
        f"                    yield batch\n"
        f"        return {{tf}}.data.Dataset.from_generator(read, output_signature=spec)\n"
        f"    return {{strategy}}.distribute_datasets_from_function(pipeline)",
        "tf.distribute splits only datasets: a Sequence (an ImageDataGenerator flow, a PyDataset) or a "
        "generator becomes one. Every step takes num_replicas_in_sync of its batches, one per replica, each "
        "worker reading its own (a disjoint, equal share: of a generator, which every worker runs, the "
        "batches at its replicas' places). A Sequence's batch order is shuffled each epoch as fit() shuffles "
        "it, and whatever it draws from NumPy to order its samples (its first batch, on_epoch_end) it draws "
        "alike on every worker, so the shares stay disjoint; its stream never ends: steps_per_epoch bounds "
        "each epoch.",
    )


def _write_path_helper(q) -> Tuple[str, str]:
    """The definition of {write_path}: where a worker writes a checkpoint or a saved model."""
    return (
        f"def {{write_path}}(path, reading=False):\n"
        f"    key = {{os}}.path.normpath(str(path))\n"
        f"    written = {{write_path}}.__dict__.setdefault({q('written')}, {{}})\n"
        f"    if reading:  # what this worker wrote there (a file, or files in that directory), else the path\n"
        f"        inside = [{{os}}.path.dirname(v) for k, v in written.items() if {{os}}.path.dirname(k) == key]\n"
        f"        return written.get(key, inside[-1] if inside else path)\n"
        f"    if {{strategy}}.extended.should_checkpoint:\n"
        f"        return path\n"
        f"    if key not in written:\n"
        f"        import atexit, shutil, tempfile\n"
        f"        directory = tempfile.mkdtemp()\n"
        f"        atexit.register(shutil.rmtree, directory, ignore_errors=True)\n"
        f"        written[key] = {{os}}.path.join(directory, {{os}}.path.basename(key))\n"
        f"    return written[key]",
        "tf.distribute: every worker saves (saving can run collective operations); "
        "only the chief writes to the real path, the others to a temporary directory removed at exit, "
        "and read back there what they wrote (reading=True).",
    )


def _shard_by_data_helper(q) -> Tuple[str, str]:
    """The definition of {shard_by_data}: a dataset split between workers by sample."""
    return (
        f"def {{shard_by_data}}(dataset):\n"
        f"    options = {{tf}}.data.Options()\n"
        f"    options.experimental_distribute.auto_shard_policy = {{tf}}.data.experimental.AutoShardPolicy.DATA\n"
        f"    return dataset.with_options(options)",
        "tf.distribute: an in-memory source has no files to split: workers split it by sample.",
    )


def _global_gradients_helper(q) -> Tuple[str, str]:
    """{global_gradients}: the replicas' gradients summed, in the replica
    context (None kept where a variable has none)."""
    return (
        f"def {{global_gradients}}(gradients):\n"
        f"    flat = {{tf}}.nest.flatten(gradients)\n"
        f"    present = [g for g in flat if g is not None]\n"
        f"    context = {{tf}}.distribute.get_replica_context()\n"
        f"    summed = iter(context.all_reduce({{tf}}.distribute.ReduceOp.SUM, present) if present else [])\n"
        f"    return {{tf}}.nest.pack_sequence_as(gradients, [None if g is None else next(summed) for g in flat])",
        "tf.distribute: the optimizer sums the replicas' gradients inside apply; a step that changes them "
        "first (clipping by norm or value, scaling) sums them here instead, so that it acts on the gradient "
        "of the global batch, as in one process.",
    )


def _replica_part_helper(q) -> Tuple[str, str]:
    """{replica_part}: gradients summed already, handed to an optimizer that
    sums the replicas' gradients again: the first replica hands them whole,
    the others zeros. Exact for any number of replicas, and under Keras 3,
    whose optimizer clips (clipnorm, global_clipnorm, clipvalue) each
    replica's gradients before it sums them, the clip then acts on the sum."""
    return (
        f"def {{replica_part}}(gradients):\n"
        f"    first = {{tf}}.distribute.get_replica_context().replica_id_in_sync_group == 0\n"
        f"    def part(g):\n"
        f"        if isinstance(g, {{tf}}.IndexedSlices):\n"
        f"            return {{tf}}.IndexedSlices(part(g.values), g.indices, g.dense_shape)\n"
        f"        return None if g is None else {{tf}}.where(first, g, {{tf}}.zeros_like(g))\n"
        f"    return [(part(g[0]),) + tuple(g[1:]) if isinstance(g, tuple) else part(g) for g in gradients]",
        "tf.distribute: gradients summed over the replicas already, for an optimizer that sums them again: "
        "the first replica hands them on whole, the others zeros (the optimizer's own clipping then acts on "
        "the sum too).",
    )


def _update_variable_helper(q) -> Tuple[str, str]:
    """{update_variable}: a variable a step updates by hand (``w.assign_sub(lr
    * dw)``) updated once on every replica's copy, in the replica context,
    with the value the replicas computed alike from the summed gradients
    (a MirroredVariable takes no update from a replica by itself). A Keras 3
    variable is updated through the tf.Variable it holds."""
    return (
        f"def {{update_variable}}(variable, method, value):\n"
        f"    def update(strategy, variable, value):\n"
        f"        return strategy.extended.update(variable, lambda v, x: getattr(v, method)(x), args=(value,))\n"
        f"    variable = variable if isinstance(variable, {{tf}}.Variable) else getattr(variable, \"value\", variable)\n"
        f"    return {{tf}}.distribute.get_replica_context().merge_call(update, args=(variable, value))",
        "tf.distribute: a variable updated by hand is updated on every replica's copy at once, with the value "
        "every replica made alike from the summed gradients.",
    )


def _clip_summed_helper(q) -> Tuple[str, str]:
    """{clip_summed}: a Keras 3 optimizer that clips (clipnorm,
    global_clipnorm, clipvalue) under fit: Keras 3 clips in
    ``BaseOptimizer._backend_apply_gradients``, on each replica's gradients,
    before ``TFOptimizer._backend_update_step`` sums them; its clip is made to
    act on their sum (summed in the replica context, clipped, handed on by the
    first replica, zeros by the others, which the optimizer's own sum gives
    back whole). tf-keras (and Keras 2) sum before they clip: left as it is."""
    return (
        f"def {{clip_summed}}(optimizer):\n"
        f"    clip = getattr(optimizer, \"_clip_gradients\", None)\n"
        f"    package = __import__(type(optimizer).__module__.split(\".\")[0])\n"
        f"    if clip is None or int(getattr(package, \"__version__\", \"2\").split(\".\")[0]) < 3:\n"
        f"        return optimizer\n"
        f"    def clip_sum(grads):\n"
        f"        context = {{tf}}.distribute.get_replica_context()\n"
        f"        if context is None or context.num_replicas_in_sync == 1:\n"
        f"            return clip(grads)\n"
        f"        present = [{{tf}}.convert_to_tensor(g) for g in grads if g is not None]\n"
        f"        summed = iter(context.all_reduce({{tf}}.distribute.ReduceOp.SUM, present) if present else [])\n"
        f"        clipped = clip([None if g is None else next(summed) for g in grads])\n"
        f"        first = context.replica_id_in_sync_group == 0\n"
        f"        return [None if g is None else {{tf}}.where(first, g, {{tf}}.zeros_like(g)) for g in clipped]\n"
        f"    optimizer._clip_gradients = clip_sum\n"
        f"    return optimizer",
        "tf.distribute: Keras 3 clips each replica's gradients before its optimizer sums them; this optimizer clips "
        "their sum instead, as one process clips the gradient of the whole batch (tf-keras sums first already).",
    )


#: placeholder -> the name the converted script gives what it defines (the
#: strategy, the helpers), made free of the script's own names
_DEFINED_NAMES = {
    "strategy": "strategy", "run_step": "run_on_replicas", "write_path": "worker_path",
    "shard_by_data": "shard_by_sample", "keras3_reduce": "reduce_for_keras3", "split_stream": "replica_batches",
    "local_values": "local_values", "sequence_batches": "sequence_dataset",
    "global_gradients": "global_gradients", "replica_part": "replica_part",
    "update_variable": "update_on_replicas", "clip_summed": "clip_after_summing",
}


# The helper functions a converted script may call, in the order they are
# defined: each is written only when the rules bound its placeholder.
_SETUP_HELPERS = (
    ("run_step", _run_step_helper),
    ("local_values", _local_values_helper),
    ("split_stream", _split_stream_helper),
    ("sequence_batches", _sequence_batches_helper),
    ("write_path", _write_path_helper),
    ("shard_by_data", _shard_by_data_helper),
    ("global_gradients", _global_gradients_helper),
    ("replica_part", _replica_part_helper),
    ("update_variable", _update_variable_helper),
    ("clip_summed", _clip_summed_helper),
)


class TfDistributeBackend(Backend):
    name = "tf-distribute"
    # predict()/evaluate() of a distributed model gather over the workers
    inference_runs_collectives = True
    legacy_keras_reason = ("tf.distribute: Keras 3 fit() fails under MultiWorkerMirroredStrategy "
                           "(keras-team/keras#20585); use tf-keras there.")  # pre_import's comment

    def __init__(self, fault_tolerant: bool = False, lr_scaling: str = "linear", warmup_epochs=None, steps_per_epoch=None):
        # --fault-tolerant: Keras fit() backs up its state every epoch and a
        # restarted (killed) worker resumes from it.
        self.fault_tolerant = fault_tolerant
        self.lr_scaling = check_lr_policy(lr_scaling)
        self.warmup_epochs = check_warmup(warmup_epochs, self.lr_scaling)
        self.steps_per_epoch = check_steps_per_epoch(steps_per_epoch, self.warmup_epochs)

    def placeholder_names(self) -> Tuple[str, ...]:
        return ("tf", "keras", "os") + tuple(_DEFINED_NAMES)

    def message_words(self) -> Dict[str, str]:
        return {
            "engine": "tf.distribute",
            "rank": "strategy.cluster_resolver.task_id",
            "size": "strategy.num_replicas_in_sync",
            "local_rank": "the local device",
            "chief": "strategy.extended.should_checkpoint",
            "broadcast_op": "(none: variables created in strategy.scope() start equal)",
            "optimizer_wrapper": "strategy.scope()",
            "tape_wrapper": "strategy.run",
            "broadcast_hook": "(none)",
            "tf1_optimizer_in_keras": "tf.distribute cannot replicate a TF1 optimizer's variables",
            # what a user can do with a script this engine refuses
            "alternative": ", or convert it with --backend horovod",
        }

    def estimator_refusal(self) -> str:
        return "tf.estimator training is not supported (tf.distribute's estimator support was removed in TF 2.16)"

    def tuner_warning(self, tuner: str) -> str:
        return (f"{tuner} searches hyperparameters by training a model per trial inside Keras Tuner, which tfdist "
                "does not convert: give it distribution_strategy=strategy (one host) so each trial's model is "
                "built in the strategy's scope, seed=<the same number> so every worker draws the same trials, and "
                "build the final model from its best hyperparameters inside `with strategy.scope():`")

    def sklearn_wrapper_warning(self, wrapper: str, handed_on: bool) -> "str | None":
        return (f"{wrapper} trains Keras models itself, with the settings its constructor holds (batch_size, "
                "epochs), which tfdist does not read: the models it builds are not built in strategy.scope(), "
                "and its batch is not made per replica under the scaled learning rate; build and compile its "
                "model in `with strategy.scope():` and give it batch_size=<batch> * strategy.num_replicas_in_sync, "
                "or train that model with model.fit(...) in the script")

    def implicit_gradients_refusal(self, function: str) -> str:
        return (f"TF1 eager training with {function}(...) is not supported: compute the gradients with "
                "tf.GradientTape in a step function")

    def tf1_refusal(self) -> str:
        return TF1_REFUSAL

    def bind_name(self, ctx, key: str) -> str:
        imports = ctx.imports
        if key == "tf":
            return imports.tensorflow()
        if key == "keras":
            return imports.keras()
        if key == "os":
            return imports.require("os", "os")
        if key in _DEFINED_NAMES:
            return imports.free_name(_DEFINED_NAMES[key])
        raise KeyError(key)

    # --- process topology
    def size(self) -> str:
        return "{strategy}.num_replicas_in_sync"

    def rank(self) -> str:
        return "{strategy}.cluster_resolver.task_id"

    def is_chief(self) -> str:
        return "{strategy}.extended.should_checkpoint"

    def is_not_chief(self) -> str:
        return "not {strategy}.extended.should_checkpoint"

    def barrier(self, tf1: Optional[str] = None) -> str:  # tf1: never (TF1 is refused)
        # a cross-worker sum every worker runs: none returns before all have called it
        return ("{strategy}.reduce({tf}.distribute.ReduceOp.SUM, "
                "{strategy}.run(lambda: {tf}.constant(1.0)), axis=None)")

    # --- start-up
    def pre_import(self, ctx, keras_fit: bool) -> List[Tuple[str, str]]:
        """(template, comment) statements before TensorFlow is first imported."""
        if not keras_fit or ctx.facts.get("keras_flavor") == "keras":
            return []
        # Only where tf-keras is installed: TensorFlow <= 2.15 has Keras 2 as
        # tf.keras already, and would fail to import tf.keras with the switch.
        ctx.facts["tf_keras_on_workers"] = True  # for tfdist verify: the original runs on the same Keras
        return [(
            "import importlib.util\n"
            f"if {ctx.quoted('TF_CONFIG')} in {{os}}.environ and importlib.util.find_spec({ctx.quoted('tf_keras')}) is not None:\n"
            f"    {{os}}.environ.setdefault({ctx.quoted(LEGACY_KERAS_ENV)}, {ctx.quoted('1')})",
            self.legacy_keras_reason,
        )]

    def setup(self, ctx, tf2: bool, keras3_guard: bool) -> List:
        q = ctx.quoted
        out = [_strategy_statement(q)]
        if keras3_guard and ctx.facts.get("keras_flavor") == "keras":
            out.append(self._keras3_multi_worker_reduce(ctx))
        elif keras3_guard:
            out.append(_keras3_multi_worker_stop(q))
        bound = ctx.bound_names()
        out.extend(helper(q) for key, helper in _SETUP_HELPERS if key in bound)
        return out

    def _keras3_multi_worker_reduce(self, ctx) -> Tuple[str, str]:
        """Keras 3 (keras-team/keras#20585) asks MultiWorkerMirroredStrategy's
        reduce() for two things it rejects, where MirroredStrategy accepts
        them: the first batch of fit/evaluate, a nested (x, y), reduced with
        axis=None only to learn its structure and shapes and build the model,
        and every step's scalar metrics reduced along axis 0. The batch is
        answered with this worker's own part of it (a cross-worker mean fails
        where the workers' parts differ in size: a validation set smaller
        than one global batch, measured on keras-team/keras's
        demo_mnist_convnet.py: "Shape mismatch in the collective", [102, 28,
        28, 1] vs [103, ...]); the scalars are reduced with axis=None, as
        MirroredStrategy does. Every call the strategy accepts is passed on
        as it is. Only under Keras 3; the scalars only with TF_CONFIG (the
        multi-worker strategy). MirroredStrategy over local devices fails on
        the nested batch too when its replicas' parts differ in size
        (``AddN ... must have the same size``, [52, 28, 28, 1] vs [51, ...]:
        keras-io's mnist_convnet on 1 process x 2 devices, a validation set
        of 103 rows), so the batch is answered so under both strategies."""
        q = ctx.quoted
        return (
            f"def {{keras3_reduce}}(reduce):\n"
            f"    def reduce_each(reduce_op, value, axis):\n"
            f"        if axis is None and {{tf}}.nest.is_nested(value):\n"
            f"            return {{tf}}.nest.map_structure(lambda v: {{strategy}}.experimental_local_results(v)[0], value)\n"
            f"        local = {{strategy}}.experimental_local_results(value)[0]\n"
            f"        if axis is not None and {q('TF_CONFIG')} in {{os}}.environ and getattr(getattr(local, {q('shape')}, None), {q('rank')}, None) == 0:\n"
            f"            return reduce(reduce_op, value, axis=None)\n"
            f"        return reduce(reduce_op, value, axis)\n"
            f"    return reduce_each\n"
            f"if int({{keras}}.__version__.split({q('.')})[0]) >= 3:\n"
            f"    {{strategy}}.reduce = {{keras3_reduce}}({{strategy}}.reduce)",
            "tf.distribute: Keras 3 fit() hands the strategy's reduce a nested batch (only to build the model from "
            "its shapes), which fails when the replicas' parts differ in size, and scalar metrics along axis 0, which "
            "MultiWorkerMirroredStrategy rejects (keras-team/keras#20585): answer the first with this replica's "
            "part, reduce the others as MirroredStrategy does.",
        )

    # --- optimisation
    def scale_lr(self, lr: str):
        return scaled_lr(self.lr_scaling, lr, "{strategy}.num_replicas_in_sync")

    def wrap_optimizer(self, optimizer: str, keras: bool):
        return None  # the optimizer aggregates the replicas' gradients itself

    def wrap_tape(self, tape: str):
        return None

    def broadcast_after_first_step(self, optimizer: str, variables: List[str], optimizer_vars: str,
                                   applies: int = 1):
        return None  # mirrored variables start equal

    def tf1_broadcast_op(self) -> str:
        raise NotImplementedError(TF1_REFUSAL)

    def tf1_broadcast_hook(self) -> str:
        raise NotImplementedError(TF1_REFUSAL)

    def keras_callbacks(self) -> List[str]:
        return []

    # --- what only tf.distribute needs
    def replica_scope(self) -> str:
        """The with-item under which variables are created mirrored."""
        return "{strategy}.scope()"

    def per_replica_batch(self, batch: str) -> str:
        """The global batch that keeps the user's batch on every replica."""
        return f"{batch} * {{strategy}}.num_replicas_in_sync"

    def gradient_share(self, loss: str) -> str:
        """This replica's share of the loss: the optimizer sums the replicas'
        gradients, so a per-replica mean loss divided by their number gives
        the gradient of the global mean."""
        return f"{loss} / {{strategy}}.num_replicas_in_sync"

    def loss_mean_again(self, loss: str) -> str:
        """A loss Keras divided by the number of replicas (for the summing
        optimizer), multiplied back to the replica's mean for reporting."""
        return f"{loss} * {{strategy}}.num_replicas_in_sync"

    def global_gradients(self, gradients: str) -> Optional[str]:
        """Gradients a step changes before the optimizer: summed over the
        replicas first (None: the engine averages them already)."""
        return f"{{global_gradients}}({gradients})"

    def replica_part(self, gradients: str) -> Optional[str]:
        """What each replica hands an optimizer that sums the replicas'
        gradients, for gradients summed already."""
        return f"{{replica_part}}({gradients})"

    def clip_after_sum(self, optimizer: str) -> str:
        """A Keras optimizer that clips, made to clip the replicas' summed gradients."""
        return f"{{clip_summed}}({optimizer})"

    def update_by_hand(self, variable: str, method: str, value: str) -> str:
        """``variable.method(value)`` written by hand in a step run on every replica."""
        return f"{{update_variable}}({variable}, \"{method}\", {value})"

    def run_on_replicas(self, step: str, args: str) -> str:
        return f"{{run_step}}({step}{', ' + args if args else ''})"

    def local_values(self, value: str) -> str:
        """This worker's rows of a distributed batch, as plain tensors."""
        return f"{{local_values}}({value})"

    def distribute_dataset(self, dataset: str) -> str:
        return f"{{strategy}}.experimental_distribute_dataset({dataset})"

    def split_batch_stream(self, batches: str) -> str:
        """Steps of num_replicas_in_sync consecutive batches of a stream, one per replica."""
        return f"{{split_stream}}({batches})"

    def sequence_dataset(self, sequence: str, shuffle: bool = True) -> str:
        """A keras Sequence or a generator of batches as a distributed dataset of its batches, one per replica and step."""
        return f"{{sequence_batches}}({sequence}{'' if shuffle else ', shuffle=False'})"

    def values_per_replica(self, function: str) -> str:
        """Per-replica values: function(replica context) called once for each local replica."""
        return f"{{strategy}}.experimental_distribute_values_from_function({function})"

    def fit_backup_callback(self, ctx):
        """A callback every worker runs so an interrupted fit() resumes, or None."""
        if not self.fault_tolerant:
            return None
        keras = "{keras}" if ctx.facts.get("keras_flavor") == "keras" else "{tf}.keras"
        return f"{keras}.callbacks.BackupAndRestore(backup_dir={ctx.quoted(BACKUP_DIR)})"

    def worker_write_path(self, path: str):
        """Where this worker writes a checkpoint or saved model at ``path``."""
        return f"{{write_path}}({path})"

    def worker_read_path(self, path: str):
        """Where this worker reads ``path`` back: what it wrote there itself, else ``path``."""
        return f"{{write_path}}({path}, reading=True)"

    # --- data
    def shard_dataset(self, dataset: str) -> str:
        return f"{{shard_by_data}}({dataset})"

    def shard_dataset_known_size(self, dataset: str) -> str:
        return f"{{shard_by_data}}({dataset})"

    def shard_files(self, dataset: str) -> str:
        return dataset  # AUTO policy: the strategy splits by file

    def shard_array(self, array: str) -> str:
        return array  # Keras turns arrays into a dataset the strategy splits by sample

    def shard_array_values(self, mapping: str) -> str:
        return mapping

    def shard_array_items(self, arrays: str) -> str:
        return arrays

    def divide_count(self, count: str) -> str:
        return f"max(1, {count} // {{strategy}}.num_replicas_in_sync)"

    def tf1_device_config(self, tf1: str) -> str:
        raise NotImplementedError(TF1_REFUSAL)

    def tf1_visible_device_list(self) -> str:
        raise NotImplementedError(TF1_REFUSAL)

    def seed_per_rank(self, seed: str) -> str:
        # MirroredStrategy (one worker) has no cluster resolver.
        return f"{seed} + ({{strategy}}.cluster_resolver.task_id if {{strategy}}.cluster_resolver else 0)"
