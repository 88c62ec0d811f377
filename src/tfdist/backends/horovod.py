"""Horovod backend, following Horovod's documented usage for TensorFlow.

https://horovod.readthedocs.io/en/stable/tensorflow.html and
https://horovod.readthedocs.io/en/stable/keras.html
"""
from __future__ import annotations

from typing import Dict, List, Optional, Tuple

from .base import Backend, check_lr_policy, check_steps_per_epoch, check_warmup, digest_lines, scaled_lr

# The Horovod module each flavour of user code needs.
HVD_TF = "horovod.tensorflow"
HVD_TF_KERAS = "horovod.tensorflow.keras"
HVD_KERAS = "horovod.keras"  # standalone Keras 2 only

KERAS3_MESSAGE = (
    "Horovod 0.28 does not average gradients in Keras 3 model.fit "
    "(TensorFlow >= 2.16); install tensorflow<2.16, or tf-keras with "
    "TF_USE_LEGACY_KERAS=1"
)


class HorovodBackend(Backend):
    name = "horovod"
    shard_is_in_place = True

    def __init__(self, lr_scaling: str = "linear", warmup_epochs=None, steps_per_epoch=None):
        self.lr_scaling = check_lr_policy(lr_scaling)
        self.warmup_epochs = check_warmup(warmup_epochs, self.lr_scaling)
        self.steps_per_epoch = check_steps_per_epoch(steps_per_epoch, self.warmup_epochs)

    def placeholder_names(self) -> Tuple[str, ...]:
        return ("hvd", "hvdk", "tf", "keras")

    def message_words(self) -> Dict[str, str]:
        return {
            "engine": "Horovod",
            "rank": "hvd.rank()",
            "size": "hvd.size()",
            "local_rank": "hvd.local_rank()",
            "chief": "hvd.rank() == 0",
            "broadcast_op": "hvd.broadcast_global_variables(0)",
            "optimizer_wrapper": "DistributedOptimizer",
            "tape_wrapper": "DistributedGradientTape",
            "broadcast_hook": "BroadcastGlobalVariablesHook",
            "tf1_optimizer_in_keras": ("Horovod's Keras DistributedOptimizer cannot wrap it (it fails at start-up) "
                                       "and horovod.tensorflow's would not average the gradients Keras computes"),
        }

    def estimator_refusal(self) -> str:
        return "tf.estimator training is not supported (use Horovod's estimator recipe by hand)"

    def tuner_warning(self, tuner: str) -> str:
        return (f"{tuner} searches hyperparameters by training a model per trial inside Keras Tuner, which tfdist "
                "does not convert: on every rank the oracle draws its own trials, writes the same trial files, and "
                "a model builder compiled with an optimizer converted here averages gradients between different "
                "ranks' models; run the search on one process with the original optimizer and give the converted "
                "training its best hyperparameters (the same on every rank)")

    def sklearn_wrapper_warning(self, wrapper: str, handed_on: bool) -> "str | None":
        if not handed_on:
            return None  # its fit() is converted like a model's: sliced data, the callbacks passed on
        return (f"{wrapper} trains Keras models inside scikit-learn, which tfdist does not convert: every process "
                "runs it whole, and a model it builds with an optimizer converted here would average gradients "
                "with other processes' differently initialised models; build and compile its models with the "
                "original optimizer, or run it on one process")

    def implicit_gradients_refusal(self, function: str) -> str:
        return (f"TF1 eager training with {function}(...) is not supported: Horovod cannot average "
                "these gradients (compute them with tf.GradientTape and wrap it in hvd.DistributedGradientTape, "
                "or use optimizer.minimize)")

    def bind_name(self, ctx, key: str) -> str:
        imports = ctx.imports
        if key == "tf":
            return imports.tensorflow()
        if key == "keras":
            return imports.keras()
        keras_mod = HVD_KERAS if ctx.facts.get("keras_flavor") == "keras" else HVD_TF_KERAS
        uses_tf_api = bool(ctx.patterns - {"Keras"}) or bool(ctx.facts.get("needs_tf_api"))
        if key == "hvd":
            # Keras-only code uses the Keras module (it has init/size/rank
            # too); anything with tapes or sessions needs horovod.tensorflow.
            return imports.require(HVD_TF if uses_tf_api else keras_mod, "hvd")
        if key == "hvdk":
            if not uses_tf_api:
                return ctx.name("hvd")
            return imports.require(keras_mod, "hvd_keras")
        raise KeyError(key)

    def size(self) -> str:
        return "{hvd}.size()"

    def rank(self) -> str:
        return "{hvd}.rank()"

    def is_chief(self) -> str:
        return "{hvd}.rank() == 0"

    def is_not_chief(self) -> str:
        return "{hvd}.rank() != 0"

    def barrier(self, tf1: Optional[str] = None) -> str:
        # Horovod's TensorFlow API has no barrier; an allreduce every rank
        # runs returns on none before all have called it.
        if tf1 is None:
            return "{hvd}.allreduce({tf}.constant(0.0), name=\"tfdist_barrier\")"
        # TF1: the op runs in a session of its own graph (the user's graph
        # untouched), on the CPU (no GPU memory taken before the user's session)
        return (f"with {tf1}.Graph().as_default():\n"
                f"    with {tf1}.Session(config={tf1}.ConfigProto(device_count={{\"GPU\": 0}})) as barrier_session:\n"
                f"        barrier_session.run({{hvd}}.allreduce({tf1}.constant(0.0), name=\"tfdist_barrier\"))")

    def setup(self, ctx, tf2: bool, keras3_guard: bool) -> List[str]:
        out = ["{hvd}.init()"]
        if tf2:
            gpus = ctx.imports.free_name("gpus")
            gpu = ctx.quoted("GPU")
            out.append(
                f"{gpus} = {{tf}}.config.experimental.list_physical_devices({gpu})\n"
                f"for gpu in {gpus}:\n"
                f"    {{tf}}.config.experimental.set_memory_growth(gpu, True)\n"
                f"if {gpus}:\n"
                f"    {{tf}}.config.experimental.set_visible_devices({gpus}[{{hvd}}.local_rank()], {gpu})"
            )
        if keras3_guard:
            # tf.keras has no __version__ in TF <= 2.15 (Keras 2); Keras 3 and
            # tf_keras (legacy Keras 2 for TF >= 2.16) have one.
            keras_version = ("{keras}.__version__" if ctx.facts.get("keras_flavor") == "keras"
                             else f"getattr({{tf}}.keras, {ctx.quoted('__version__')}, {ctx.quoted('2')})")
            out.append(
                f"if int({keras_version}.split({ctx.quoted('.')})[0]) >= 3:\n"
                f"    raise SystemExit({ctx.quoted(KERAS3_MESSAGE)})"
            )
        return out

    def scale_lr(self, lr: str):
        return scaled_lr(self.lr_scaling, lr, "{hvd}.size()")

    def keras_warmup_callback(self, ctx, model=None):
        # Horovod's own callback ramps from initial_lr / size to initial_lr:
        # the warmup of the linear rule exactly. initial_lr is the scaled rate
        # the compiled optimizer holds when fit() starts. Under sqrt scaling
        # it would start too low: the generic callback then. Its momentum
        # correction is off: with Keras >= 2.11 optimizers (TF 2.15) the
        # momentum is a Python float and the callback fails on it at the
        # first step ('float' object has no attribute 'dtype', seen on 2 ranks).
        if self.lr_scaling != "linear" or model is None:
            return super().keras_warmup_callback(ctx, model)
        return (f"{{hvdk}}.callbacks.LearningRateWarmupCallback(initial_lr=float({model}.optimizer.learning_rate), "
                f"warmup_epochs={self.warmup_epochs}, momentum_correction=False)", None)

    def wrap_optimizer(self, optimizer: str, keras: bool) -> str:
        return f"{{{'hvdk' if keras else 'hvd'}}}.DistributedOptimizer({optimizer})"

    def wrap_tape(self, tape: str) -> str:
        return f"{tape} = {{hvd}}.DistributedGradientTape({tape})"

    def broadcast_after_first_step(self, optimizer: str, variables: List[str], optimizer_vars: str,
                                   applies: int = 1) -> str:
        # optimizer.iterations is a tf.Variable: the condition is evaluated
        # per step (also inside @tf.function, where AutoGraph turns it into a
        # tf.cond), so the broadcast runs exactly once, after the first
        # apply_gradients created the optimizer's slot variables (each apply
        # counts one: after the last of several in one step, it is their number).
        lines = [f"if {optimizer}.iterations == {applies}:"]
        for v in variables:
            lines.append(f"    {{hvd}}.broadcast_variables({v}, root_rank=0)")
        lines.append(f"    {{hvd}}.broadcast_variables({optimizer_vars}, root_rank=0)")
        return "\n".join(lines)

    def broadcast_now(self, variables: str) -> str:
        return f"{{hvd}}.broadcast_variables({variables}, root_rank=0)"

    def tf1_broadcast_op(self) -> str:
        return "{hvd}.broadcast_global_variables(0)"

    def tf1_broadcast_hook(self) -> str:
        return "{hvd}.BroadcastGlobalVariablesHook(0)"

    def keras_callbacks(self) -> List[str]:
        return [
            "{hvdk}.callbacks.BroadcastGlobalVariablesCallback(0)",
            "{hvdk}.callbacks.MetricAverageCallback()",
        ]

    def shard_dataset(self, dataset: str) -> str:
        # Size unknown until read (records, generators): dropping the last
        # (len % size) elements first gives every rank the same number of
        # elements, hence of batches; an uneven split would leave one rank
        # waiting in an allreduce. (Costs ~0.1 ms per batch of pipeline
        # time; sources of known size use shard_dataset_known_size.)
        return (f"{dataset}.batch({{hvd}}.size(), drop_remainder=True).unbatch()"
                f".shard({{hvd}}.size(), {{hvd}}.rank())")

    def shard_in_rounds(self, dataset: str) -> str:
        # Rank r keeps element r of each round of size elements (a last
        # partial round is dropped: the same count on every rank). Windows,
        # not .batch(size).unbatch() as shard_dataset does: elements of
        # different shapes (a last, smaller batch) cannot be batched together.
        return (f"{dataset}.window({{hvd}}.size(), drop_remainder=True).flat_map(lambda *batches: "
                f"{{tf}}.data.Dataset.zip(batches if len(batches) > 1 else batches[0])"
                f".skip({{hvd}}.rank()).take(1))")

    def shard_dataset_known_size(self, dataset: str) -> str:
        # Every rank takes len // size elements: the same number of batches.
        return (f"{dataset}.apply(lambda ds: ds.shard({{hvd}}.size(), {{hvd}}.rank())"
                f".take(ds.cardinality() // {{hvd}}.size()))")

    def shard_evaluation_known_size(self, dataset: str) -> str:
        # A validation set already batched with fewer batches than ranks
        # (one batch of 100 rows, 2 ranks) would leave every rank's share
        # empty (fit: "Expected input data to be non-empty"): evaluated whole.
        return (f"{dataset}.apply(lambda ds: ds if 0 <= ds.cardinality() < {{hvd}}.size() else "
                f"ds.shard({{hvd}}.size(), {{hvd}}.rank()).take(ds.cardinality() // {{hvd}}.size()))")

    def shard_files(self, dataset: str) -> str:
        return f"{dataset}.shard({{hvd}}.size(), {{hvd}}.rank())"

    def shard_array(self, array: str) -> str:
        # Every rank takes the same number of rows (len // size).
        return f"{array}[{{hvd}}.rank()::{{hvd}}.size()][:len({array}) // {{hvd}}.size()]"

    def shard_array_once(self, array: str) -> str:
        # The array is made by a call (np.random.random((64, 8))): bound once, then sliced.
        return f"(lambda rows: rows[{{hvd}}.rank()::{{hvd}}.size()][:len(rows) // {{hvd}}.size()])({array})"

    def divide_count(self, count: str) -> str:
        return f"max(1, {count} // {{hvd}}.size())"

    def tf1_device_config(self, tf1: str) -> str:
        return f"{tf1}.ConfigProto(gpu_options={tf1}.GPUOptions(visible_device_list=str({{hvd}}.local_rank())))"

    def tf1_visible_device_list(self) -> str:
        return "str({hvd}.local_rank())"

    def rank_share_of_stream(self, ctx, iterable: str) -> str:
        memo = ctx.state("tfdist.backends.rank_share", dict)
        if "name" not in memo:
            memo["name"] = name = ctx.imports.free_name("rank_share")
            # Rank r keeps element r of each round of size elements (a last
            # partial round is dropped: every rank the same count). The element
            # kept is copied as it is read: a generator that refills the same
            # arrays for its next element would otherwise hand every rank the
            # round's last one. A tf.data dataset keeps its share in its own
            # pipeline (shard_in_rounds): the loop then reads this rank's
            # elements only.
            q = ctx.quoted
            ctx.define(
                f"def {name}(stream):\n"
                f"    import copy, hashlib, numpy\n"
                f"    if isinstance(stream, {{tf}}.data.Dataset):\n"
                f"        yield from {self.shard_in_rounds('stream')}\n"
                f"        return\n"
                f"    kept, digest = None, hashlib.sha256()\n"
                f"    for index, element in enumerate(stream):\n"
                f"        if index < {{hvd}}.size():  # the first round, which every rank must read alike\n"
                + digest_lines(" " * 12, "element") +
                f"        if index % {{hvd}}.size() == {{hvd}}.rank():\n"
                f"            try:\n"
                f"                kept = copy.deepcopy(element)\n"
                f"            except Exception:  # an element that cannot be copied: kept as it is\n"
                f"                kept = element\n"
                f"        if index == {{hvd}}.size() - 1 and {{tf}}.executing_eagerly():  # (TF1 graphs: not checked)\n"
                f"            mark = float(int(digest.hexdigest()[:12], 16))\n"
                f"            if len(set({{hvd}}.allgather({{tf}}.constant([mark], {{tf}}.float64)).numpy().tolist())) > 1:\n"
                f"                raise SystemExit({q('tfdist: the ranks read different elements from a stream they share out: its order differs from rank to rank, so their shares would overlap. Make it the same on every rank (seed what shuffles it -- np.random.seed, random.seed, a seed= argument -- before it is made).')})\n"
                f"        if index % {{hvd}}.size() == {{hvd}}.size() - 1:\n"
                f"            yield kept",
                ctx.say("{engine}: rank r keeps element r of each round of {size} elements of a stream (disjoint, "
                        "equal shares; a last partial round is dropped), a copy taken when it is read; at the end "
                        "of the first round the ranks compare what they read and stop, saying so, if it differs."))
        return f"{memo['name']}({iterable})"

    def rank_strided_sequence(self, name: str, base: str) -> str:
        # Keras calls sequence[i] for i in range(len(sequence)) every epoch:
        # rank r reads batches r, r + size, r + 2 * size, ... of the wrapped
        # Sequence, so the ranks' batches are disjoint, and every rank reads
        # len // size of them (an equal count: no rank waits in an allreduce).
        return (
            f"class {name}({base}):\n"
            f"    \"\"\"Horovod: rank r reads batches r, r + size, r + 2 * size, ... of a Sequence\n"
            f"    (disjoint shares of len(sequence) // size batches on every rank).\"\"\"\n"
            f"\n"
            f"    def __init__(self, sequence):\n"
            f"        super().__init__()\n"
            f"        self.sequence = sequence\n"
            f"        self.epoch = 0\n"
            f"        self.reorder_alike()  # the order its __init__ drew differs from rank to rank\n"
            f"\n"
            f"    def __len__(self):\n"
            f"        return len(self.sequence) // {{hvd}}.size()\n"
            f"\n"
            f"    def __getitem__(self, index):\n"
            f"        return self.sequence[index * {{hvd}}.size() + {{hvd}}.rank()]\n"
            f"\n"
            f"    def on_epoch_end(self):\n"
            f"        self.epoch += 1\n"
            f"        self.reorder_alike()\n"
            f"\n"
            f"    def reorder_alike(self):\n"
            f"        # what its on_epoch_end draws from NumPy, every rank draws alike (seeded by the epoch)\n"
            f"        import numpy\n"
            f"        if hasattr(self.sequence, \"on_epoch_end\"):\n"
            f"            state = numpy.random.get_state()\n"
            f"            numpy.random.seed(self.epoch)\n"
            f"            try:\n"
            f"                self.sequence.on_epoch_end()\n"
            f"            finally:\n"
            f"                numpy.random.set_state(state)\n"
        )

    def seed_per_rank(self, seed: str) -> str:
        return f"{seed} + {{hvd}}.rank()"

    def keep_own_draw(self, draw: str, batch: str) -> str:
        # Rank r keeps draws r, r + size, ... of the sampler's stream: the
        # ranks' batches are disjoint and together are the stream one
        # process would have drawn.
        return (f"for {draw} in range({{hvd}}.size()):\n"
                f"    {batch} = {{call}}\n"
                f"    if {draw} == {{hvd}}.rank():\n"
                f"        {{target}} = {batch}")

    def shard_dataset_plain(self, dataset: str) -> str:
        return f"{dataset}.shard({{hvd}}.size(), {{hvd}}.rank())"
