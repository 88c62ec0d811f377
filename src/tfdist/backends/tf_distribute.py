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
from .tf_distribute_helpers import DEFINED_NAMES, SETUP_HELPERS

# keras-team/keras#20585: Keras 3 fit() under MultiWorkerMirroredStrategy
# fails; tf-keras (Keras 2) works, selected before TensorFlow is imported.
# A script written for standalone Keras 3 (``import keras``) keeps Keras 3:
# the strategy's reduce is given what Keras 3 asks of it (see setup()).
LEGACY_KERAS_ENV = "TF_USE_LEGACY_KERAS"
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
        return ("tf", "keras", "os") + tuple(DEFINED_NAMES)

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
        if key in DEFINED_NAMES:
            return imports.free_name(DEFINED_NAMES[key])
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
        everywhere = ctx.facts.get("tf_keras_everywhere")  # why Keras 3 cannot run it on one host either
        where = "" if everywhere else f"{ctx.quoted('TF_CONFIG')} in {{os}}.environ and "
        return [(
            "import importlib.util\n"
            f"if {where}importlib.util.find_spec({ctx.quoted('tf_keras')}) is not None:\n"
            f"    {{os}}.environ.setdefault({ctx.quoted(LEGACY_KERAS_ENV)}, {ctx.quoted('1')})",
            self.legacy_keras_reason if not everywhere else (
                "tf.distribute: Keras 3 fit() fails under MultiWorkerMirroredStrategy (keras-team/keras#20585) "
                f"and {everywhere}; use tf-keras wherever it is installed."),
        )]

    def setup(self, ctx, tf2: bool, keras3_guard: bool) -> List:
        q = ctx.quoted
        out = [_strategy_statement(q)]
        if keras3_guard:
            out.append(self._keras3_multi_worker_reduce(ctx))
        if ctx.facts.get("keras_predicts"):
            out.append(self._even_predict(ctx))
        bound = ctx.bound_names()
        out.extend(helper(q) for key, helper in SETUP_HELPERS if key in bound)
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
        of 103 rows), so the batch is answered so under both strategies.
        A tf.keras script is Keras 3 on one host (and on workers where
        tf-keras is not installed): the same patch, keyed on tf.keras's
        version (keras-io's VQ-VAE on 1 x 2 devices stopped on [52, 7, 7] vs
        [51, 7, 7] before)."""
        q = ctx.quoted
        version = (f"{{keras}}.__version__" if ctx.facts.get("keras_flavor") == "keras"
                   else f"getattr({{tf}}.keras, {q('__version__')}, {q('2')})")
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
            f"if int({version}.split({q('.')})[0]) >= 3:\n"
            f"    {{strategy}}.reduce = {{keras3_reduce}}({{strategy}}.reduce)",
            "tf.distribute: Keras 3 fit() hands the strategy's reduce a nested batch (only to build the model from "
            "its shapes), which fails when the replicas' parts differ in size, and scalar metrics along axis 0, which "
            "MultiWorkerMirroredStrategy rejects (keras-team/keras#20585): answer the first with this replica's "
            "part, reduce the others as MirroredStrategy does.",
        )

    def _even_predict(self, ctx) -> Tuple[str, str]:
        """Measured (TF 2.21, tf-keras, 2 TF_CONFIG workers): ``predict`` on
        arrays whose rows do not divide evenly between the workers stops both
        ("Shape mismatch in the collective instance": 225 rows fail, 224 and
        226 run; the Generative-DL VAE notebooks' ``decoder.predict(grid)``).
        Under TF_CONFIG the rows are padded with copies of the last one to a
        multiple of the replicas, and the padding's outputs dropped: the same
        predictions, in order (measured, 225 rows: equal to the model's own
        call). Datasets and generators are passed on as they are. It runs
        traced even where the script makes tf.functions run eagerly (a
        debugging ``run_functions_eagerly(True)``): its gathering of the
        workers' rows fails eagerly ("all_gather is not supported in eager
        mode", tf-keras, 2 workers; a held-out cookbook's VAE)."""
        q = ctx.quoted
        model = "{keras}.Model" if ctx.facts.get("keras_flavor") == "keras" else "{tf}.keras.Model"
        return (
            f"def {{even_predict}}(predict):\n"
            f"    def predict_padded(model, x, *args, **kwargs):\n"
            f"        rows = set(int(a.shape[0]) for a in {{tf}}.nest.flatten(x) if len(getattr(a, {q('shape')}, ())) > 0)\n"
            f"        pad = (-min(rows)) % {{strategy}}.num_replicas_in_sync if len(rows) == 1 else 0\n"
            f"        if pad:\n"
            f"            x = {{tf}}.nest.map_structure(lambda a: {{tf}}.concat([a, {{tf}}.repeat(a[-1:], pad, axis=0)], 0), x)\n"
            f"        eager = {{tf}}.config.functions_run_eagerly()\n"
            f"        {{tf}}.config.run_functions_eagerly(False)\n"
            f"        try:\n"
            f"            out = predict(model, x, *args, **kwargs)\n"
            f"        finally:\n"
            f"            {{tf}}.config.run_functions_eagerly(eager)\n"
            f"        return {{tf}}.nest.map_structure(lambda o: o[:min(rows)], out) if pad else out\n"
            f"    return predict_padded\n"
            f"if {q('TF_CONFIG')} in {{os}}.environ:\n"
            f"    {model}.predict = {{even_predict}}({model}.predict)",
            "tf.distribute: Keras's predict under MultiWorkerMirroredStrategy stops when the rows do not divide evenly "
            "between the workers: pad them with copies of the last row to a multiple of the replicas, and drop the "
            "padding's predictions; run it traced (it gathers the workers' rows, which eager mode cannot).",
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

    def split_batch_stream(self, batches: str, check: int = 0) -> str:
        """Steps of num_replicas_in_sync consecutive batches of a stream, one per replica; with check
        (the loop's line), the workers confirm at run time that they read the same stream."""
        return f"{{split_stream}}({batches}{f', check={check}' if check else ''})"

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
