"""The code the tf.distribute backend writes into a converted script beside
its strategy: the helper functions a rule may call ({run_step},
{write_path}, ...), each a (template, comment) pair written once, only when
a rule bound its placeholder, and the names they are given.
"""
from __future__ import annotations

from typing import Tuple

from .base import digest_lines


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
        f"def {{split_stream}}(batches, check=None):\n"
        f"    import copy, hashlib, random, numpy\n"
        f"    shared = {{split_stream}}.__dict__.setdefault(\n"
        f"        {q('shared')}, [numpy.random.RandomState(1234).get_state(), random.Random(1234).getstate()])\n"
        f"\n"
        f"    def alike(action):  # the stream draws from NumPy and random as every worker does, the script as before\n"
        f"        own = numpy.random.get_state(), random.getstate()\n"
        f"        numpy.random.set_state(shared[0])\n"
        f"        random.setstate(shared[1])\n"
        f"        try:\n"
        f"            return action()\n"
        f"        finally:\n"
        f"            shared[:] = numpy.random.get_state(), random.getstate()\n"
        f"            numpy.random.set_state(own[0])\n"
        f"            random.setstate(own[1])\n"
        f"\n"
        f"    def mark(group):  # a digest of a step's batches, as a number\n"
        f"        digest = hashlib.sha256()\n"
        + digest_lines(" " * 8, "group") +
        f"        return float(int(digest.hexdigest()[:12], 16))\n"
        f"\n"
        f"    drawn = callable(batches) and not hasattr(batches, {q('__iter__')})  # a draw of one batch\n"
        f"\n"
        f"    def step(group, check):  # one batch per replica; with check, every worker read the same ones\n"
        f"        if check is not None and check not in {{split_stream}}.__dict__.setdefault({q('checked')}, set()):\n"
        f"            value = mark(group)\n"
        f"            marks = {{strategy}}.experimental_distribute_values_from_function(\n"
        f"                lambda context: {{tf}}.constant([value], {{tf}}.float64))\n"
        f"            if len(set({{strategy}}.gather(marks, axis=0).numpy().tolist())) > 1:\n"
        f"                raise SystemExit(\n"
        f"                    f{q('tfdist: the workers read different batches in the training loop at line {check} of the original script: ')}\n"
        f"                    {q('its data is ordered differently on each worker, so their shares would overlap. Make the order the same on ')}\n"
        f"                    {q('every worker (seed what shuffles it -- tf.random.set_seed, a seed= argument, np.random.seed -- before it is ')}\n"
        f"                    {q('made) or build a tf.data.Dataset of the samples.')})\n"
        f"            if drawn:  # a draw: checked at its first step (a stream: at each pass)\n"
        f"                {{split_stream}}.checked.add(check)\n"
        f"        return {{strategy}}.experimental_distribute_values_from_function(\n"
        f"            lambda context: group[context.replica_id_in_sync_group])\n"
        f"\n"
        f"    def copied(batch):  # copied as it is read: a generator may refill the same arrays for its next batch\n"
        f"        try:\n"
        f"            return copy.deepcopy(batch)\n"
        f"        except Exception:  # a batch that cannot be copied: kept as it is\n"
        f"            return batch\n"
        f"\n"
        f"    if drawn:  # called once per replica\n"
        f"        return step([copied(alike(batches)) for _ in range({{strategy}}.num_replicas_in_sync)], check)\n"
        f"\n"
        f"    def steps(check):\n"
        f"        stream = alike(lambda: iter(batches))\n"
        f"        group = []\n"
        f"        while True:\n"
        f"            try:\n"
        f"                group.append(copied(alike(lambda: next(stream))))\n"
        f"            except StopIteration:\n"
        f"                return\n"
        f"            if len(group) == {{strategy}}.num_replicas_in_sync:\n"
        f"                yield step(group, check)\n"
        f"                group, check = [], None\n"
        f"    return steps(check)",
        "tf.distribute: every num_replicas_in_sync consecutive batches of a stream make one step, each "
        "replica training on the one at its place (a last, incomplete group is left out); a function drawing one "
        "batch is called once per replica. What the stream draws from NumPy's and Python's global generators it "
        "draws from a state every worker shares (the script's own draws stay as they were), so every worker reads "
        "the same stream; with check (the loop's line), the first step of each pass (of a draw, the first step) "
        "confirms it: the workers gather digests of their batches and stop, saying so, if they differ.",
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
DEFINED_NAMES = {
    "strategy": "strategy", "run_step": "run_on_replicas", "write_path": "worker_path",
    "shard_by_data": "shard_by_sample", "keras3_reduce": "reduce_for_keras3", "split_stream": "replica_batches",
    "local_values": "local_values", "sequence_batches": "sequence_dataset",
    "global_gradients": "global_gradients", "replica_part": "replica_part",
    "update_variable": "update_on_replicas", "clip_summed": "clip_after_summing", "even_predict": "predict_evenly",
}


# The helper functions a converted script may call, in the order they are
# defined: each is written only when the rules bound its placeholder.
SETUP_HELPERS = (
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
