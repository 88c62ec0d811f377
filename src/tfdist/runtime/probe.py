"""Start-up probe: runs a training script unchanged and records what it did.

Usage (normally launched by ``tfdist verify``)::

    TFDIST_PROBE_DIR=/some/dir python -m tfdist.runtime.probe [--as-file ORIG] SCRIPT [ARGS...]

The probe executes SCRIPT exactly like ``python SCRIPT ARGS`` would (as
``__main__``, with ``sys.argv`` = [SCRIPT, *ARGS] and the script's directory
first on ``sys.path``).  It never imports TensorFlow itself: observers are
installed by post-import hooks, right after the script imports TensorFlow /
Keras / h5py.  They watch from outside the user's code:

* every ``tf.Variable`` created (eager values read at exit; TF1 graph
  variables read from each ``Session`` just before it closes, or at exit if it
  is still open);
* optimizer steps: ``iterations`` of every Keras optimizer instance (new and
  legacy), ``Session.run`` calls that execute an op returned by a TF1
  ``Optimizer.apply_gradients``/``minimize``, and the TF1 global step;
* checkpoint / summary / model files written, through TensorFlow's Python
  entry points plus an audit hook on Python ``open()``;
* the samples consumed, as per-row hashes (see "Samples" below).

At exit each process writes ``rank-<R>.json`` into ``$TFDIST_PROBE_DIR``
(rank from HOROVOD_RANK / OMPI_COMM_WORLD_RANK / PMI_RANK, else
``hvd.rank()``, else the task of ``TF_CONFIG`` (tf.distribute: a "chief" task
is rank 0 and pushes the workers' indices up by one), else 0).

TensorFlow 2.15 (Keras 2) and TensorFlow 2.16+ (Keras 3, or tf-keras with
``TF_USE_LEGACY_KERAS=1``) are both observed.  tf.distribute variables
(MirroredVariable, SyncOnReadVariable) are read on each process from their
local primary copy (never through a cross-worker reduction, which could hang
at exit), and their per-device copies are not counted again; the
tf.distribute strategies the script built are recorded (``strategies``:
class, replicas in sync, workers, chief or not).  Files keep whether they
still existed at exit (``exists_at_exit``), so that ``tfdist verify`` can
tell the temporary directories TensorFlow's multi-worker rule gives
non-chief workers (``.../workertemp_<N>/...``, removed again) from writes to
the user's paths.  Every observer is wrapped so that a failure inside
the probe is recorded in ``probe_errors`` and never reaches the script.

``--as-file ORIG`` runs SCRIPT's code but presents it to itself as ORIG
(``__file__``, ``sys.argv[0]`` and ``sys.path[0]``), so a converted copy kept
in a temporary directory still finds files next to the original.

Optional ``TFDIST_PROBE_LOSSES=1`` (``tfdist verify --compare``): record the
training loss, from outside the script, into ``record["losses"]``:

* Keras ``fit``: a callback appended to fit's callbacks records ``logs`` after
  every batch (``batches``: the loss and metrics as Keras reports them, a
  running mean within the epoch) and every epoch (``epochs``: also ``val_*``);
* ``GradientTape`` loops outside ``fit``: the value of every
  ``tape.gradient`` target (the quantity minimised) in call order
  (``steps``).  Eager targets are read directly; inside a ``tf.function``
  the traced gradients are made to depend on a ``tf.py_function`` that
  records the target each time the step runs.  Under a tf.distribute
  strategy the target in a replica context is the loss divided by the
  replicas in sync (tfdist's conversion and Keras 3 losses both divide), so
  it is multiplied back: every run records the loss of its batch;
* TF1 sessions: the loss given to ``Optimizer.compute_gradients`` /
  ``minimize`` is linked to the train op its ``apply_gradients`` returns, and
  fetched together with that train op in the same ``Session.run`` (one
  evaluation of the same step: nothing else runs).

Optional ``TFDIST_PROBE_MAX_STEPS=K``: stop Keras ``Model.fit`` gracefully
(``model.stop_training``) once K optimizer steps ran in this process; the
steps ``fit`` had planned are recorded as ``planned_steps``.  Other training
loops are not capped (``steps_cap.applied`` stays false).

Samples (``record["samples"]``): each batch lists its rows as
``"<sample hash>:<label hash>:..."`` strings; every row is hashed with :func:`row_hashes`
(blake2b, 8 bytes, over ``<dtype><row shape>;`` + the row's bytes), so that
``tfdist verify`` can check that each rank fed every sample with its own
labels and that the ranks read different samples.  Four sources:

* ``tf1-feed``: a ``Session.run`` that runs a train op with a ``feed_dict``:
  the fed values with a leading batch dimension, aligned row by row; the
  first one (feed_dict order) is the sample, the others (same leading
  dimension) its labels.  One batch per training step.
* ``iterator``: eager iteration of a ``tf.data`` dataset (``OwnedIterator
  .__next__``) yielding a tuple/dict of tensors with a common leading
  dimension (first = sample, others = labels).  Every batch is recorded with
  the optimizer-step counter when it was fetched; a batch counts as
  ``trained`` when that counter moved before the next batch was fetched
  (evaluation loops do not move it).
* ``tape``: eager ``GradientTape`` loops (the model called on NumPy slices
  or eager tensors, outside ``tf.function``): while a tape records, the
  input of the first Keras model call is the sample batch and the ``y_true``
  of the first Keras loss call after it (a ``keras.losses.Loss`` object or a
  function of ``keras.losses``) in the same tape its labels, row by row when
  their leading dimensions match (otherwise the samples are recorded
  alone).  Like ``iterator`` batches, a batch counts as ``trained`` when the
  optimizer-step counter moved before the next recorded batch (tape,
  iterator or keras-fit) or the end.  Tapes inside
  ``Model.fit`` and steps whose batch the ``iterator`` source already
  recorded (an eager tf.data batch fetched since the last optimizer step)
  are not recorded again.
* ``keras-fit``: ``Model.fit`` given NumPy arrays / eager tensors: the rows of
  x (with y's rows as labels) once per call, with the number of epochs (the
  rows within an epoch are listed in the order given, not in fit's shuffled
  order).  ``fit`` over a dataset or generator is NOT recorded: it iterates
  inside a tf.function, and reading the dataset a second time could change
  what it yields (shuffle seeds, generators).

At most TFDIST_PROBE_SAMPLE_ROWS rows (default 200,000) are kept; further
rows set ``capped``.  TFDIST_PROBE_SAMPLE_VALUES=K also keeps the values of
up to K distinct rows (``values``: hash -> dtype/shape/base64), for tests
that recompute a label from its sample.
"""
from __future__ import annotations

import atexit
import functools
import hashlib
import json
import os
import re
import socket
import sys
import threading
import time
import types

# --------------------------------------------------------------------------
# Tables: every TensorFlow / Keras / h5py name the probe relies on.
# Update these when the libraries move things around.
# --------------------------------------------------------------------------

#: Environment variables naming this process's rank / world size, in order.
RANK_ENV_VARS = ("HOROVOD_RANK", "OMPI_COMM_WORLD_RANK", "PMI_RANK", "PMIX_RANK")
SIZE_ENV_VARS = ("HOROVOD_SIZE", "OMPI_COMM_WORLD_SIZE", "PMI_SIZE")

#: tf.distribute: TF_CONFIG (its task gives the rank, its cluster the size).
TF_CONFIG_ENV = "TF_CONFIG"
TF_CONFIG_RANKED_TASKS = ("chief", "worker")    # in rank order; ps/evaluator tasks are not ranks

#: Modules whose import triggers installing observers ("hook groups").
POST_IMPORT_HOOKS = {
    "tensorflow": "tensorflow",
    # Keras 3 (TensorFlow >= 2.16): optimizers, Model.save*, Model.__call__,
    # and fit (defined by the TensorFlow backend's trainer).
    "keras.src.optimizers.base_optimizer": "keras3_optimizer",
    "keras.src.models.model": "keras3_model",
    "keras.src.backend.tensorflow.trainer": "keras3_trainer",
    # Keras 2.13-2.15 (tf.keras in TF 2.15), keras<2.13, tf_keras.
    "keras.src.engine.training": "keras_model",
    "keras.engine.training": "keras_model",
    "tf_keras.src.engine.training": "keras_model",
    "keras.src.optimizers.optimizer": "keras_optimizer",
    "keras.optimizers.optimizer_experimental.optimizer": "keras_optimizer",
    "keras.optimizers.optimizer": "keras_optimizer",
    "tf_keras.src.optimizers.optimizer": "keras_optimizer",
    "keras.src.optimizers.legacy.optimizer_v2": "keras_legacy_optimizer",
    "keras.optimizers.optimizer_v2.optimizer_v2": "keras_legacy_optimizer",
    "keras.optimizers.legacy.optimizer_v2": "keras_legacy_optimizer",
    "tf_keras.src.optimizers.legacy.optimizer_v2": "keras_legacy_optimizer",
    "keras.src.losses": "keras_losses",
    "keras.losses": "keras_losses",
    "tf_keras.src.losses": "keras_losses",
    "h5py": "h5py",
}

#: Variable creation: (module, metaclass) whose __call__ builds every tf.Variable.
TF_VARIABLE_METACLASS = ("tensorflow.python.ops.variables", "VariableMetaclass")
#: Concrete variable classes that own storage (wrappers such as Keras'
#: AutoCastVariable are skipped so a value is never counted twice).
TF_VARIABLE_STORAGE_CLASSES = (
    ("tensorflow.python.ops.resource_variable_ops", "BaseResourceVariable"),
    ("tensorflow.python.ops.ref_variable", "RefVariable"),
    ("tensorflow.python.ops.variables", "RefVariable"),
)
#: Variable classes that only alias another variable (``assign`` results).
TF_VARIABLE_ALIAS_CLASS_NAMES = frozenset({"_UnreadVariable"})
#: tf.distribute variables: one value per process, held by per-device
#: component variables (``.values``; the first is the primary).
TF_DISTRIBUTED_VARIABLE_CLASS = ("tensorflow.python.distribute.values", "DistributedVariable")
#: TensorFlow internals that create float tf.Variables of their own (left
#: trainable by default) which are no model variables: not recorded.
TF_INTERNAL_VARIABLE_CREATORS = (
    # the ordering token of collective all-reduce (MirroredStrategy, MultiWorkerMirroredStrategy)
    ("tensorflow.python.distribute.cross_device_utils", "CollectiveReplicaLauncher.__init__"),
)
#: tf.distribute strategies (instances recorded at creation; the default
#: strategy is not one the script built).
TF_STRATEGY_BASE_CLASS = ("tensorflow.python.distribute.distribute_lib", "StrategyBase")
TF_DEFAULT_STRATEGY_CLASS_NAMES = frozenset({"_DefaultDistributionStrategy", "_DefaultDistributionStrategyV1"})

#: TF1 sessions, and the graph element classes their fetches are made of.
TF_SESSION_CLASS = ("tensorflow.python.client.session", "BaseSession")
TF_OPERATION_CLASS = ("tensorflow.python.framework.ops", "Operation")
TF_TENSOR_CLASS = ("tensorflow.python.framework.tensor", "Tensor")
#: TF1 optimizer base class (apply_gradients returns the train op).
TF1_OPTIMIZER_CLASS = ("tensorflow.python.training.optimizer", "Optimizer")
#: TF1 global step lookup.
TF1_GLOBAL_STEP = ("tensorflow.python.training.training_util", "get_global_step")
TF1_TRAINABLE_COLLECTION = "trainable_variables"

#: Keras optimizer base classes (class name in the hooked module) whose
#: __init__ is wrapped to collect instances; steps = ``_iterations``.
KERAS_OPTIMIZER_BASES = {
    "keras_optimizer": "_BaseOptimizer",
    "keras_legacy_optimizer": "OptimizerV2",
    "keras3_optimizer": "BaseOptimizer",
}
KERAS_ITERATIONS_ATTR = "_iterations"
KERAS_MODEL_CLASS = "Model"
#: Keras 3: fit lives in the backend's trainer class (Model inherits it),
#: Model.__call__ is Layer.__call__ (wrapped on Model only), and a Keras
#: variable holds its tf.Variable in ``_value``.
KERAS3_TRAINER_CLASS = "TensorFlowTrainer"
KERAS3_CALLBACKS_MODULE = "keras.src.callbacks"
KERAS3_VARIABLE_VALUE_ATTR = "_value"
#: Keras 3 trainer methods that read a batch only to build the model (under
#: a tf.distribute strategy fit peeks at one batch first): not training samples.
KERAS3_PEEK_METHODS = ("_maybe_symbolic_build",)

# File-writing entry points: (module, "Class.method" or "function", how to
# find the path, kind).  "arg:<index>:<name>" = positional index (counting
# self for methods) or keyword name; "ret" = the return value.
FILE_WRITE_HOOKS = (
    ("tensorflow.python.checkpoint.checkpoint", "Checkpoint.write", "ret", "checkpoint"),
    ("tensorflow.python.checkpoint.checkpoint", "Checkpoint.save", "ret", "checkpoint"),
    ("tensorflow.python.checkpoint.checkpoint_management", "CheckpointManager.save", "ret", "checkpoint"),
    ("tensorflow.python.checkpoint.functional_saver", "MultiDeviceSaver.save", "arg:1:file_prefix", "checkpoint"),
    ("tensorflow.python.training.saver", "Saver.save", "ret", "checkpoint"),
    ("tensorflow.python.saved_model.save", "save_and_return_nodes", "arg:1:export_dir", "model"),
    ("tensorflow.python.summary.writer.event_file_writer", "EventFileWriter.__init__", "arg:1:logdir", "summary"),
    ("tensorflow.python.ops.gen_summary_ops", "create_summary_file_writer", "arg:1:logdir", "summary"),
    ("tensorflow.python.lib.io.file_io", "atomic_write_string_to_file", "arg:0:filename", "file"),
    ("tensorflow.python.lib.io.file_io", "FileIO.__init__", "arg:1:name", "file"),  # gfile.GFile
    ("tensorflow.python.ops.gen_io_ops", "write_file", "arg:0:filename", "file"),     # tf.io.write_file
)
#: Public API namespaces hold their own references to exported functions
#: (``tf.io.write_file is gen_io_ops.write_file``); patched functions are
#: replaced in these modules too.
API_ALIAS_ROOT = "tensorflow"
API_ALIAS_PREFIX = "tensorflow._api."
#: Keras model save entry points (hooked in the Keras model module).
KERAS_SAVE_METHODS = (("save", "arg:1:filepath"), ("save_weights", "arg:1:filepath"))
#: Arguments giving the open mode for entry points that also read.
WRITE_MODE_ARGS = {"FileIO.__init__": "arg:2:mode", "File.__init__": "arg:2:mode"}
H5PY_FILE_CLASS = ("h5py", "File")

#: File kinds that only rank 0 may write.
GATED_KINDS = ("checkpoint", "summary", "model")
#: The temporary directories tf.distribute's multi-worker rule gives
#: non-chief workers (tensorflow/tf_keras distributed_file_utils: a
#: ``workertemp_<task id>`` directory inside the user's directory, removed
#: after each save).
MULTI_WORKER_TEMP_DIR = re.compile(r"(^|/)workertemp_\d+(/|$)")
#: Path patterns -> kind (checked on the basename/path; first match wins).
PATH_KIND_PATTERNS = (
    (re.compile(r"events\.out\.tfevents"), "summary"),
    (re.compile(r"(^|/)checkpoint$|\.index$|\.data-\d+-of-\d+$|\.ckpt(-\d+)?$|\.meta$"), "checkpoint"),
    (re.compile(r"\.(h5|hdf5|keras|pb|pbtxt)$|saved_model"), "model"),
)
#: Temporary files TF writes before renaming them (ignored).
TEMP_FILE_PATTERNS = (re.compile(r"\.tmp[0-9a-f]{32}$"), re.compile(r"_temp(_[0-9a-f]+)?/part-\d+"))

#: Eager tf.data iteration and eager tensors (sample recording).
TF_DATA_ITERATOR_CLASS = ("tensorflow.python.data.ops.iterator_ops", "OwnedIterator")
#: Eager iteration of a tf.distribute dataset (``experimental_distribute_dataset``):
#: elements hold PerReplica values (one batch per local replica).
TF_DISTRIBUTED_ITERATOR_CLASS = ("tensorflow.python.distribute.input_lib", "DistributedIteratorBase")
TF_PER_REPLICA_CLASS_NAMES = frozenset({"PerReplica"})
TF_EAGER_TENSOR_CLASS = ("tensorflow.python.framework.ops", "EagerTensor")
#: Eager GradientTape loops (tape sample source): the tape class whose
#: __enter__/__exit__ delimit one step, the Keras loss base class (in the
#: hooked losses module) whose __call__ receives y_true, and the parameter
#: names that identify the loss functions of that module (first two params).
TF_GRADIENT_TAPE_CLASS = ("tensorflow.python.eager.backprop", "GradientTape")
KERAS_LOSS_CLASS = "Loss"
KERAS_LOSS_FUNCTION_PARAMS = ("y_true", "y_pred")
#: Keras namespaces holding their own references to the loss functions
#: (``keras.api._v2.keras.losses.mse is keras.src.losses.mean_squared_error``).
KERAS_ALIAS_PREFIXES = ("keras.", "tf_keras.")
KERAS_ALIAS_ROOTS = ("keras", "tf_keras")
#: Model.fit arguments read for the keras-fit sample source.
KERAS_FIT_SAMPLE_ARGS = ("x", "y", "epochs", "initial_epoch", "validation_split", "steps_per_epoch", "batch_size")

PROBE_DIR_ENV = "TFDIST_PROBE_DIR"
SAMPLE_ROWS_ENV = "TFDIST_PROBE_SAMPLE_ROWS"
SAMPLE_VALUES_ENV = "TFDIST_PROBE_SAMPLE_VALUES"
DEFAULT_SAMPLE_ROWS = 200_000
SAMPLE_HASH = "blake2b-8(<dtype><row shape>;<row bytes>)"
MAX_STEPS_ENV = "TFDIST_PROBE_MAX_STEPS"
LOSSES_ENV = "TFDIST_PROBE_LOSSES"
#: verify --compare: seed Python's, NumPy's and TensorFlow's global generators
#: with this value + the rank before the script runs.  The original (rank 0 of
#: 1) and rank 0 of the converted run then start from the same initial weights
#: (which rank 0 gives every replica), so their losses differ by the training
#: only, not by the draw; the other ranks get other seeds, so a conversion that
#: relies on ranks drawing alike (an unseeded shuffle before a split) stays
#: visible.  A script that seeds itself overrides it.
SEED_ENV = "TFDIST_PROBE_SEED"
#: TFDIST_PROBE_LOCAL_DEVICES=N (tfdist verify --local-devices N): this
#: process's CPU is presented as N logical devices (see _split_local_cpu).
LOCAL_DEVICES_ENV = "TFDIST_PROBE_LOCAL_DEVICES"
#: Loss values kept per series before thinning to every other one (a long run
#: keeps its whole curve at a coarser resolution).
MAX_LOSS_POINTS = 20000
#: tfdist's own PYTHONPATH entry / the user's original PYTHONPATH, restored
#: before the script runs so the script sees its usual environment.
ADDED_PATH_ENV = "TFDIST_PROBE_ADDED_PATH"
ORIG_PYTHONPATH_ENV = "TFDIST_PROBE_ORIG_PYTHONPATH"

RECORD_VERSION = 1


# --------------------------------------------------------------------------
# Hashing (public: tests and tfdist.runtime.verify use the same definition)
# --------------------------------------------------------------------------

def digest_arrays(values) -> tuple[str, float, list[str]]:
    """sha256 over arrays in order: for each, ``<dtype.str><shape>;`` then the
    C-order bytes.  Returns (hex digest, float64 sum, per-array 16-hex digests).
    Names are deliberately not hashed (Keras may number layers differently)."""
    total = hashlib.sha256()
    fsum = 0.0
    items = []
    for value in values:
        import numpy as np

        arr = np.ascontiguousarray(np.asarray(value))
        head = f"{arr.dtype.str}{tuple(arr.shape)};".encode()
        raw = arr.tobytes()
        total.update(head)
        total.update(raw)
        items.append(hashlib.sha256(head + raw).hexdigest()[:16])
        if arr.dtype.kind in "fiub":
            try:
                fsum += float(np.sum(arr, dtype=np.float64))
            except Exception:  # noqa: BLE001 - exotic dtypes
                pass
    return total.hexdigest(), fsum, items


def _row_bytes_object(row) -> bytes:
    parts = []
    for item in row.reshape(-1):
        if isinstance(item, bytes):
            parts.append(item)
        elif isinstance(item, str):
            parts.append(item.encode("utf-8"))
        else:
            parts.append(repr(item).encode("utf-8"))
    return b"\x00".join(parts)


def row_hashes(value) -> list[str] | None:
    """16-hex blake2b digests of each row (leading dimension) of ``value``,
    or None when it has no leading dimension.  Rows are hashed with their
    dtype and row shape: ``<dtype.str><row shape>;`` then the C-order bytes
    (strings: UTF-8 joined by NUL)."""
    import numpy as np

    arr = np.asarray(value)
    if arr.ndim == 0:
        return None
    head = f"{arr.dtype.str}{tuple(arr.shape[1:])};".encode()
    n = arr.shape[0]
    out = []
    if arr.dtype == object:
        for i in range(n):
            out.append(hashlib.blake2b(head + _row_bytes_object(np.asarray(arr[i], dtype=object)),
                                       digest_size=8).hexdigest())
        return out
    arr = np.ascontiguousarray(arr)
    for i in range(n):
        out.append(hashlib.blake2b(head + arr[i].tobytes(), digest_size=8).hexdigest())
    return out


def combine_row_hashes(columns: list[list[str]]) -> list[str]:
    """One hash per row for several aligned arrays (a multi-input sample)."""
    if len(columns) == 1:
        return columns[0]
    return [hashlib.blake2b("|".join(parts).encode(), digest_size=8).hexdigest() for parts in zip(*columns)]


# --------------------------------------------------------------------------
# State
# --------------------------------------------------------------------------

def _tf1_losses_run(graph, fetches) -> list:
    """The losses linked to the train ops this run executes (each once)."""
    gid = id(graph)
    linked = {name: loss for (g, name), loss in STATE.tf1_losses.items() if g == gid}
    if not linked or not _runs_train_op(graph, fetches):
        return []
    if len(linked) == 1:
        return list(linked.values())
    out = []
    for name, loss in linked.items():
        saved = STATE.train_ops
        STATE.train_ops = {(gid, name)}
        try:
            if any(_depends_on_train_op(gid, op) for op in _iter_fetch_ops(graph, fetches)):
                out.append(loss)
        finally:
            STATE.train_ops = saved
    return out


def _with_fetches(args, kwargs, extra):
    """Session.run arguments with ``[fetches, extra]`` as the fetches, or (extra
    None) the user's fetches back."""
    args = list(args)
    if args:
        args[0] = [args[0], extra] if extra is not None else args[0][0]
    else:
        kwargs = dict(kwargs)
        kwargs["fetches"] = [kwargs.get("fetches"), extra] if extra is not None else kwargs["fetches"][0]
    return tuple(args), kwargs


def _record_loss_values(values) -> None:
    """One training step's losses (tape targets, TF1 losses), in order."""
    import numpy as np  # noqa: PLC0415

    for value in values if isinstance(values, (list, tuple)) else [values]:
        arr = np.asarray(value, dtype=np.float64)
        _append_loss(float(arr.mean()) if arr.size else float("nan"))


def _append_loss(value: float) -> None:
    with STATE.lock:
        seq = STATE.loss_seen
        STATE.loss_seen += 1
        if seq % STATE.loss_stride:
            return
        STATE.loss_steps.append((seq, value))
        if len(STATE.loss_steps) >= MAX_LOSS_POINTS:
            STATE.loss_stride *= 2
            STATE.loss_steps = [(q, v) for q, v in STATE.loss_steps if q % STATE.loss_stride == 0]


class _State:
    def __init__(self):
        self.installed = False
        self.pid = os.getpid()
        self.start = time.time()
        self.errors: list[str] = []
        self.lock = threading.RLock()
        self.variables: list = []          # strong refs, creation order
        self.variable_ids: set[int] = set()
        self.storage_classes: tuple = ()
        self.keras_optimizers: list = []   # strong refs
        self.keras_optimizer_ids: set[int] = set()
        self.distributed_var_class = None  # tf.distribute DistributedVariable, once resolved
        self.component_ids: set[int] = set()   # per-device copies of distributed variables
        self.strategies: list = []         # tf.distribute strategies the script built
        self.internal = threading.local()  # inside TF internals that create non-model variables
        self.sessions: list = []           # weakrefs to open TF1 sessions
        self.graph_snapshots: dict = {}    # id(graph) -> snapshot dict
        self.graph_order: list = []
        self.train_ops: set = set()        # (id(graph), op name)
        self.train_dep_cache: dict = {}
        self.tf1_train_runs = 0
        self.tf1_eager_applies = 0
        self.in_probe = threading.local()
        self.files: dict = {}              # absolute path -> entry
        # files opened read-write without truncating ("r+b": tf-keras
        # load_model opens a .keras archive so): path -> (mtime_ns, size) at
        # the open; kept as written only if the file changed
        self.updated_in_place: dict = {}
        self.ignore_prefixes: tuple = ((), "\0", "\0")
        self.start_cwd = os.getcwd()
        self.probe_dir = None
        self.max_steps = None
        self.cap_done = 0
        self.cap_applied = False
        self.planned_steps = 0
        self.planned_unknown = False
        self.fit_calls = 0
        self.sample_batches: list = []     # dicts, in consumption order
        self.sample_rows = 0
        self.sample_cap = DEFAULT_SAMPLE_ROWS
        self.sample_capped = False
        self.sample_values_cap = 0
        self.sample_values: dict = {}      # hash -> {"dtype", "shape", "b64"}
        self.sample_skipped: list = []     # sources seen but not recorded, and why
        self.iterators = 0
        self.fit_samples_calls = 0
        self.fetch_seq = 0
        self.keras_fit_depth = 0
        self.peeking = 0                   # inside a Keras 3 method that peeks at a batch
        self.iterator_step_mark = None     # step counter when the last eager iterator batch was fetched
        self.tape_batches = 0
        self.record_losses = False
        self.seed = None
        self.local_devices = 1        # TFDIST_PROBE_LOCAL_DEVICES, once applied
        self.loss_steps: list = []         # [seq, value]: tape.gradient targets / TF1 losses, in order
        self.loss_stride = 1               # keep every loss_stride-th value (thinned when long)
        self.loss_seen = 0
        self.loss_batches: list = []       # Keras fit: [fit call, epoch, batch, logs]
        self.loss_epochs: list = []        # Keras fit: [fit call, epoch, logs]
        self.fit_loss_calls = 0
        self.tf1_losses: dict = {}         # (id(graph), train op name) -> loss tensor
        self.tf1_pending_loss: dict = {}   # id(graph) -> loss of the last compute_gradients
        self.exit_code = None
        self.exit_how = None
        self.exception = None
        self.script = None
        self.written = False


STATE = _State()


def _note_error(where: str, exc: BaseException) -> None:
    try:
        if len(STATE.errors) < 50:
            STATE.errors.append(f"{where}: {type(exc).__name__}: {exc}"[:300])
    except Exception:  # noqa: BLE001
        pass


def _busy() -> bool:
    return getattr(STATE.in_probe, "busy", False)


class _ProbeBusy:
    """Marks probe-internal TF calls so observers ignore them."""

    def __enter__(self):
        self.prev = _busy()
        STATE.in_probe.busy = True

    def __exit__(self, *exc):
        STATE.in_probe.busy = self.prev
        return False


def _resolve(module_name: str, qualname: str):
    """Return (owner, attr name, current value) or None if missing."""
    mod = sys.modules.get(module_name)
    if mod is None:
        try:
            import importlib
            mod = importlib.import_module(module_name)
        except Exception:  # noqa: BLE001
            return None
    owner = mod
    parts = qualname.split(".")
    for part in parts[:-1]:
        owner = getattr(owner, part, None)
        if owner is None:
            return None
    if isinstance(owner, type):
        value = owner.__dict__.get(parts[-1])
    else:
        value = getattr(owner, parts[-1], None)
    if value is None:
        return None
    return owner, parts[-1], value


def _install_wrapper(owner, attr: str, orig, make_wrapper):
    """Set ``owner.attr`` to ``make_wrapper(orig)``, marked as the probe's."""
    wrapper = make_wrapper(orig)
    try:
        functools.update_wrapper(wrapper, orig)
    except Exception:  # noqa: BLE001
        pass
    wrapper._tfdist_probe = True
    setattr(owner, attr, wrapper)
    return wrapper


def _patch(module_name: str, qualname: str, make_wrapper) -> bool:
    try:
        found = _resolve(module_name, qualname)
        if found is None:
            return False
        owner, attr, orig = found
        if getattr(orig, "_tfdist_probe", False):
            return True
        wrapper = _install_wrapper(owner, attr, orig, make_wrapper)
        if isinstance(owner, types.ModuleType):
            _replace_api_aliases(orig, wrapper)
        return True
    except Exception as exc:  # noqa: BLE001
        _note_error(f"patch {module_name}.{qualname}", exc)
        return False


def _replace_api_aliases(orig, wrapper) -> None:
    for name, mod in list(sys.modules.items()):
        if mod is None or not (name == API_ALIAS_ROOT or name.startswith(API_ALIAS_PREFIX)):
            continue
        try:
            namespace = vars(mod)
        except TypeError:
            continue
        for key, value in list(namespace.items()):
            if value is orig:
                try:
                    setattr(mod, key, wrapper)
                except Exception:  # noqa: BLE001
                    pass


def _get_arg(spec: str, args, kwargs, result=None):
    if spec == "ret":
        return result
    _, index, name = spec.split(":")
    if name in kwargs:
        return kwargs[name]
    index = int(index)
    if index < len(args):
        return args[index]
    return None


# --------------------------------------------------------------------------
# Files
# --------------------------------------------------------------------------

def _path_to_str(path):
    if path is None:
        return None
    if isinstance(path, int):
        return None
    try:
        if hasattr(path, "numpy"):  # eager string tensor
            path = path.numpy()
    except Exception:  # noqa: BLE001
        return None
    if isinstance(path, bytes):
        path = path.decode("utf-8", "replace")
    try:
        path = os.fspath(path)
    except TypeError:
        return None
    if isinstance(path, bytes):
        path = path.decode("utf-8", "replace")
    return path if isinstance(path, str) and path else None


def _compute_ignore_prefixes():
    """(always-ignored prefixes, temp prefix, cwd prefix)."""
    import site
    import tempfile

    prefixes = {sys.prefix, sys.base_prefix, sys.exec_prefix, sys.base_exec_prefix,
                "/dev", "/proc", "/sys"}
    try:
        prefixes.update(site.getsitepackages())
    except Exception:  # noqa: BLE001
        pass
    try:
        prefixes.add(site.getusersitepackages())
    except Exception:  # noqa: BLE001
        pass
    home = os.path.expanduser("~")
    for sub in (".cache", ".keras", ".config", ".nv", ".local/lib"):
        prefixes.add(os.path.join(home, sub))
    if STATE.probe_dir:
        prefixes.add(STATE.probe_dir)

    def norm(p):
        return os.path.realpath(p).rstrip(os.sep) + os.sep

    always = tuple(sorted({norm(p) for p in prefixes if p}))
    # Temporary files are noise, except under the directory the script runs
    # in (tfdist verify runs scripts inside a temporary directory).
    return always, norm(tempfile.gettempdir()), norm(STATE.start_cwd)


def _ignored(real: str) -> bool:
    check = real + os.sep
    always, tmp, cwd = STATE.ignore_prefixes
    if check.startswith(cwd) and not any(cwd.startswith(p) for p in always):
        return False
    if any(check.startswith(p) for p in always):
        return True
    return check.startswith(tmp)


def classify_path(path: str, default: str = "file") -> str:
    for pattern, kind in PATH_KIND_PATTERNS:
        if pattern.search(path):
            return kind
    return default


def _record_file(path, kind: str, via: str) -> None:
    try:
        path = _path_to_str(path)
        if path is None:
            return
        if "://" in path and not path.startswith("file://"):
            full = path
        else:
            if path.startswith("file://"):
                path = path[len("file://"):]
            full = os.path.abspath(path)
            real = os.path.realpath(full)
            if "__pycache__" in real:
                return
            if _ignored(real):
                return
        for pattern in TEMP_FILE_PATTERNS:
            if pattern.search(full):
                return
        if kind == "file":
            kind = classify_path(full, "file")
        with STATE.lock:
            entry = STATE.files.get(full)
            if entry is None:
                STATE.files[full] = {"path": full, "kind": kind, "via": [via], "count": 1}
            else:
                entry["count"] += 1
                if entry["kind"] == "file" and kind != "file":
                    entry["kind"] = kind
                if via not in entry["via"]:
                    entry["via"].append(via)
    except Exception as exc:  # noqa: BLE001
        _note_error("record_file", exc)


_WRITE_FLAGS = os.O_WRONLY | os.O_RDWR | os.O_APPEND | os.O_CREAT | os.O_TRUNC


def _audit_hook(event, args):
    if event != "open":
        return
    try:
        if STATE.pid != os.getpid() or _busy():
            return
        path, mode, flags = args
        if isinstance(flags, int) and flags >= 0:
            if not flags & _WRITE_FLAGS:
                return
        elif not (isinstance(mode, str) and any(c in mode for c in "wax+")):
            return
        if (isinstance(flags, int) and flags >= 0 and flags & os.O_RDWR
                and not flags & (os.O_CREAT | os.O_TRUNC | os.O_APPEND)) or _opens_in_place(mode):
            _note_in_place(path)
        _record_file(path, "file", "open")
    except Exception:  # noqa: BLE001 - never raise from an audit hook
        pass


def _is_write_mode(mode) -> bool:
    if mode is None:
        return False
    if isinstance(mode, bytes):
        mode = mode.decode()
    mode = str(mode)
    return any(c in mode for c in "wax+")


def _opens_in_place(mode) -> bool:
    """Read-write without creating or truncating ("r+", "rb+"): may not write."""
    if isinstance(mode, bytes):
        mode = mode.decode()
    return isinstance(mode, str) and "+" in mode and "r" in mode and not any(c in mode for c in "wax")


def _note_in_place(path) -> None:
    try:
        full = os.path.abspath(_path_to_str(path))
        st = os.stat(full)
    except (OSError, TypeError):
        return
    with STATE.lock:
        if full not in STATE.files:  # recorded as written before: it stays written
            STATE.updated_in_place.setdefault(full, (st.st_mtime_ns, st.st_size))


def _drop_unchanged_in_place() -> None:
    """A file only opened read-write, and unchanged since: not written."""
    for full, (mtime, size) in list(STATE.updated_in_place.items()):
        entry = STATE.files.get(full)
        try:
            st = os.stat(full)
        except OSError:
            continue
        if entry is not None and (st.st_mtime_ns, st.st_size) == (mtime, size):
            del STATE.files[full]


def _make_file_wrapper(qualname: str, path_spec: str, kind: str):
    mode_spec = WRITE_MODE_ARGS.get(qualname)

    def make(orig):
        def wrapper(*args, **kwargs):
            result = orig(*args, **kwargs)
            if STATE.pid == os.getpid() and not _busy():
                try:
                    mode = _get_arg(mode_spec, args, kwargs) if mode_spec is not None else None
                    if mode_spec is None or _is_write_mode(mode):
                        path = _get_arg(path_spec, args, kwargs, result)
                        if mode_spec is not None and _opens_in_place(mode):
                            _note_in_place(path)
                        _record_file(path, kind, qualname)
                except Exception as exc:  # noqa: BLE001
                    _note_error(qualname, exc)
            return result
        return wrapper
    return make


# --------------------------------------------------------------------------
# Variables
# --------------------------------------------------------------------------

def _install_variable_tracking():
    storage = []
    for module_name, cls_name in TF_VARIABLE_STORAGE_CLASSES:
        found = _resolve(module_name, cls_name)
        if found is not None and isinstance(found[2], type):
            storage.append(found[2])
    STATE.storage_classes = tuple(storage)
    if not storage:
        _note_error("variables", RuntimeError("no TF variable classes found"))
        return

    found = _resolve(*TF_DISTRIBUTED_VARIABLE_CLASS)
    STATE.distributed_var_class = found[2] if found is not None and isinstance(found[2], type) else None

    def make(orig):
        def __call__(cls, *args, **kwargs):
            var = orig(cls, *args, **kwargs)
            try:
                if getattr(STATE.internal, "depth", 0):
                    pass
                elif STATE.distributed_var_class is not None and isinstance(var, STATE.distributed_var_class):
                    _track_distributed_variable(var)
                elif (isinstance(var, STATE.storage_classes)
                        and type(var).__name__ not in TF_VARIABLE_ALIAS_CLASS_NAMES
                        and id(var) not in STATE.variable_ids):
                    with STATE.lock:
                        STATE.variable_ids.add(id(var))
                        STATE.variables.append(var)
            except Exception as exc:  # noqa: BLE001
                _note_error("variable_created", exc)
            return var
        return __call__

    module_name, cls_name = TF_VARIABLE_METACLASS
    _patch(module_name, cls_name + ".__call__", make)

    def make_internal(orig):
        def internal(*args, **kwargs):
            STATE.internal.depth = getattr(STATE.internal, "depth", 0) + 1
            try:
                return orig(*args, **kwargs)
            finally:
                STATE.internal.depth -= 1
        return internal

    for module_name, qualname in TF_INTERNAL_VARIABLE_CREATORS:
        _patch(module_name, qualname, make_internal)


def _track_distributed_variable(var) -> None:
    """Record a tf.distribute variable once, in place of its per-device
    components (created - and recorded - just before it)."""
    components = list(getattr(var, "_values", None) or getattr(var, "values", None) or ())
    ids = {id(c) for c in components}
    with STATE.lock:
        STATE.component_ids.update(ids)
        if ids & STATE.variable_ids:
            STATE.variables[:] = [v for v in STATE.variables if id(v) not in ids]
            STATE.variable_ids.difference_update(ids)
        if id(var) not in STATE.variable_ids:
            STATE.variable_ids.add(id(var))
            STATE.variables.append(var)


def _local_variable(var):
    """The tf.Variable whose value this process holds: a Keras 3 variable's
    backing variable, a tf.distribute variable's primary (local) copy."""
    if type(var).__module__.startswith("keras.") and hasattr(var, KERAS3_VARIABLE_VALUE_ATTR):
        inner = getattr(var, KERAS3_VARIABLE_VALUE_ATTR)
        if inner is not None:
            var = inner
    if STATE.distributed_var_class is not None and isinstance(var, STATE.distributed_var_class):
        primary = getattr(var, "_primary", None)
        if primary is None:
            values = getattr(var, "_values", None) or ()
            primary = values[0] if values else None
        if primary is not None:
            var = primary
    return var


def _install_strategy_tracking():
    def make(orig):
        def __init__(self, *args, **kwargs):
            orig(self, *args, **kwargs)
            try:
                if STATE.pid == os.getpid() and type(self).__name__ not in TF_DEFAULT_STRATEGY_CLASS_NAMES:
                    with STATE.lock:
                        if not any(s is self for s in STATE.strategies):
                            STATE.strategies.append(self)
            except Exception as exc:  # noqa: BLE001
                _note_error("strategy_init", exc)
        return __init__

    module_name, cls_name = TF_STRATEGY_BASE_CLASS
    _patch(module_name, cls_name + ".__init__", make)


def _strategies_info() -> list[dict]:
    out = []
    for strategy in list(STATE.strategies):
        entry = {"class": type(strategy).__name__}
        with _ProbeBusy():
            try:
                entry["num_replicas_in_sync"] = int(strategy.num_replicas_in_sync)
            except Exception as exc:  # noqa: BLE001
                _note_error("strategy_replicas", exc)
            extended = getattr(strategy, "extended", None)
            workers = getattr(extended, "_num_workers", None)
            entry["num_workers"] = int(workers) if isinstance(workers, int) else 1
            try:
                entry["should_checkpoint"] = bool(extended.should_checkpoint)
            except Exception:  # noqa: BLE001
                entry["should_checkpoint"] = None
            resolver = getattr(strategy, "cluster_resolver", None)
            entry["task_type"] = getattr(resolver, "task_type", None) if resolver is not None else None
            entry["task_id"] = getattr(resolver, "task_id", None) if resolver is not None else None
        out.append(entry)
    return out


def _is_graph_variable(var) -> bool:
    var = _local_variable(var)
    in_graph = getattr(var, "_in_graph_mode", None)
    if in_graph is None:
        return True  # RefVariable & co are graph-only
    return bool(in_graph)


def _is_float_variable(var) -> bool:
    """Trainable-in-practice: counters (int64 ``tf.Variable(0)``) are created
    with trainable=True by default but are never trained."""
    try:
        dtype = var.dtype.base_dtype
        return bool(dtype.is_floating or dtype.is_complex)
    except Exception:  # noqa: BLE001
        return True


def _graph_fetch(var):
    elem = getattr(var, "_graph_element", None)
    if elem is not None:
        return elem
    inner = getattr(var, "_variable", None)
    return inner if inner is not None else var


def _snapshot_session(sess) -> None:
    """Read the trainable variables (and step counters) of a TF1 session's
    graph just before it closes."""
    if STATE.pid != os.getpid():
        return
    try:
        if getattr(sess, "_closed", False) or getattr(sess, "_session", None) is None:
            return
        graph = sess.graph
        trainable = [v for v in graph.get_collection(TF1_TRAINABLE_COLLECTION) if _is_float_variable(v)]
        fetches = {"trainable": [_graph_fetch(v) for v in trainable]}
        step_fn = _resolve(*TF1_GLOBAL_STEP)
        if step_fn is not None:
            try:
                gstep = step_fn[2](graph)
                if gstep is not None:
                    fetches["global_step"] = _graph_fetch(gstep)
            except Exception:  # noqa: BLE001
                pass
        opt_iters = {}
        for opt in list(STATE.keras_optimizers):
            it = getattr(opt, KERAS_ITERATIONS_ATTR, None)
            if it is not None and _is_graph_variable(it) and getattr(it, "graph", None) is graph:
                opt_iters[str(id(opt))] = _graph_fetch(it)
        if opt_iters:
            fetches["opt_iters"] = opt_iters
        if not fetches["trainable"] and len(fetches) == 1:
            return
        with _ProbeBusy():
            values = sess.run(fetches)
        snap = {
            "names": [getattr(v, "name", "?") for v in trainable],
            "values": values["trainable"],
            "trainable_flags": [True] * len(trainable),
            "global_step": int(values["global_step"]) if "global_step" in values else None,
            "opt_iters": {k: int(v) for k, v in values.get("opt_iters", {}).items()},
        }
        key = id(graph)
        with STATE.lock:
            if key not in STATE.graph_snapshots:
                STATE.graph_order.append(key)
            STATE.graph_snapshots[key] = snap
    except Exception as exc:  # noqa: BLE001
        _note_error("session_snapshot", exc)


# --------------------------------------------------------------------------
# TF1 sessions and optimizers
# --------------------------------------------------------------------------

_OP_CLASSES: list = []      # [Operation class, Tensor class], resolved at install


def _iter_fetch_ops(graph, fetches, depth=0):
    if depth > 20 or fetches is None:
        return
    op_cls, tensor_cls = _OP_CLASSES
    if isinstance(fetches, op_cls):
        yield fetches
        return
    if isinstance(fetches, tensor_cls):
        yield fetches.op
        return
    if isinstance(fetches, (list, tuple)):
        for item in fetches:
            yield from _iter_fetch_ops(graph, item, depth + 1)
        return
    if isinstance(fetches, dict):
        for item in fetches.values():
            yield from _iter_fetch_ops(graph, item, depth + 1)
        return
    if isinstance(fetches, (str, bytes)):
        try:
            name = fetches.decode() if isinstance(fetches, bytes) else fetches
            elem = graph.as_graph_element(name)
        except Exception:  # noqa: BLE001
            return
        yield from _iter_fetch_ops(graph, elem, depth + 1)
        return
    op = getattr(fetches, "op", None)   # variables and other tensor-likes
    if isinstance(op, op_cls):
        yield op
        return
    if hasattr(fetches, "__attrs_attrs__"):
        for attr in fetches.__attrs_attrs__:
            yield from _iter_fetch_ops(graph, getattr(fetches, attr.name, None), depth + 1)


def _runs_train_op(graph, fetches) -> bool:
    gid = id(graph)
    cache = STATE.train_dep_cache
    if isinstance(fetches, _OP_CLASSES[0]):       # fast path: sess.run(train_op)
        hit = cache.get((gid, fetches.name))
        if hit is not None:
            return hit
    for op in _iter_fetch_ops(graph, fetches):
        key = (gid, op.name)
        hit = cache.get(key)
        if hit is None:
            hit = _depends_on_train_op(gid, op)
            cache[key] = hit
        if hit:
            return True
    return False


def _depends_on_train_op(gid, root) -> bool:
    train = STATE.train_ops
    seen = set()
    stack = [root]
    cache = STATE.train_dep_cache
    while stack:
        op = stack.pop()
        name = op.name
        if name in seen:
            continue
        seen.add(name)
        key = (gid, name)
        if key in train or cache.get(key) is True:
            return True
        if cache.get(key) is False and op is not root:
            continue
        for dep in op.control_inputs:
            stack.append(dep)
        for tensor in op.inputs:
            stack.append(tensor.op)
    return False


def _install_session_hooks():
    import weakref

    cls_mod, cls_name = TF_SESSION_CLASS
    op_found, tensor_found = _resolve(*TF_OPERATION_CLASS), _resolve(*TF_TENSOR_CLASS)
    if op_found is None or tensor_found is None:
        _note_error("session hooks", RuntimeError("Operation/Tensor classes not found"))
        return
    _OP_CLASSES[:] = [op_found[2], tensor_found[2]]

    def make_init(orig):
        def __init__(self, *args, **kwargs):
            orig(self, *args, **kwargs)
            try:
                if STATE.pid == os.getpid():
                    with STATE.lock:
                        STATE.sessions.append(weakref.ref(self))
            except Exception as exc:  # noqa: BLE001
                _note_error("session_init", exc)
        return __init__

    def make_close(orig):
        def close(self, *args, **kwargs):
            if not _busy():
                _snapshot_session(self)
            return orig(self, *args, **kwargs)
        return close

    def make_run(orig):
        def run(self, *args, **kwargs):
            losses = None
            if STATE.record_losses and STATE.tf1_losses and not _busy():
                try:
                    fetches = args[0] if args else kwargs.get("fetches")
                    losses = _tf1_losses_run(self.graph, fetches)
                except Exception as exc:  # noqa: BLE001
                    _note_error("session_run_loss", exc)
            if losses:
                args, kwargs = _with_fetches(args, kwargs, losses)
                both = orig(self, *args, **kwargs)
                result = both[0]
                try:
                    _record_loss_values(both[1])
                except Exception as exc:  # noqa: BLE001
                    _note_error("session_run_loss_value", exc)
                args, kwargs = _with_fetches(args, kwargs, None)
            else:
                result = orig(self, *args, **kwargs)
            if STATE.train_ops and not _busy():
                try:
                    fetches = args[0] if args else kwargs.get("fetches")
                    if _runs_train_op(self.graph, fetches):
                        step = STATE.tf1_train_runs
                        STATE.tf1_train_runs += 1
                        feed = args[1] if len(args) > 1 else kwargs.get("feed_dict")
                        if feed:
                            try:
                                _record_feed(feed, step)
                            except Exception as exc:  # noqa: BLE001
                                _note_error("session_run_samples", exc)
                except Exception as exc:  # noqa: BLE001
                    _note_error("session_run", exc)
            return result
        return run

    def make_make_callable(orig):
        def make_callable(self, *args, **kwargs):
            fn = orig(self, *args, **kwargs)
            try:
                fetches = args[0] if args else kwargs.get("fetches")
                if STATE.train_ops and _runs_train_op(self.graph, fetches):
                    inner = fn

                    def counted(*a, **k):
                        out = inner(*a, **k)
                        STATE.tf1_train_runs += 1
                        return out
                    return counted
            except Exception as exc:  # noqa: BLE001
                _note_error("make_callable", exc)
            return fn
        return make_callable

    _patch(cls_mod, cls_name + ".__init__", make_init)
    _patch(cls_mod, cls_name + ".close", make_close)
    _patch(cls_mod, cls_name + ".run", make_run)
    _patch(cls_mod, cls_name + ".make_callable", make_make_callable)

    def make_apply(orig):
        def apply_gradients(self, *args, **kwargs):
            result = orig(self, *args, **kwargs)
            try:
                graph = getattr(result, "graph", None)
                name = getattr(result, "name", None)
                if graph is not None and name is not None and not _is_func_graph(graph):
                    with STATE.lock:
                        STATE.train_ops.add((id(graph), name))
                        STATE.train_dep_cache.clear()
                        loss = STATE.tf1_pending_loss.pop(id(graph), None)
                        if loss is not None:
                            STATE.tf1_losses[(id(graph), name)] = loss
                else:
                    from tensorflow.python.eager import context  # noqa: PLC0415
                    if context.executing_eagerly():
                        STATE.tf1_eager_applies += 1
            except Exception as exc:  # noqa: BLE001
                _note_error("tf1_apply_gradients", exc)
            return result
        return apply_gradients

    def make_compute(orig):
        def compute_gradients(self, *args, **kwargs):
            result = orig(self, *args, **kwargs)
            if STATE.record_losses:
                try:
                    loss = args[0] if args else kwargs.get("loss")
                    graph = getattr(loss, "graph", None)
                    if graph is not None and not _is_func_graph(graph) and hasattr(loss, "op"):
                        STATE.tf1_pending_loss[id(graph)] = loss
                except Exception as exc:  # noqa: BLE001
                    _note_error("tf1_compute_gradients", exc)
            return result
        return compute_gradients

    opt_mod, opt_name = TF1_OPTIMIZER_CLASS
    _patch(opt_mod, opt_name + ".apply_gradients", make_apply)
    _patch(opt_mod, opt_name + ".compute_gradients", make_compute)


def _is_func_graph(graph) -> bool:
    return type(graph).__name__ == "FuncGraph" or getattr(graph, "building_function", False)


# --------------------------------------------------------------------------
# Samples
# --------------------------------------------------------------------------

def _keep_value(digest: str, row) -> None:
    if len(STATE.sample_values) >= STATE.sample_values_cap or digest in STATE.sample_values:
        return
    import base64

    import numpy as np

    arr = np.array(row, copy=True, order="C")   # keeps 0-d rows 0-d (ascontiguousarray would not)
    if arr.dtype == object:
        return
    STATE.sample_values[digest] = {"dtype": arr.dtype.str, "shape": list(arr.shape),
                                   "b64": base64.b64encode(arr.tobytes()).decode("ascii")}


def _columns(value):
    """(row hashes, numpy array or None) of one element/feed value; nested
    tuples/lists/dicts of arrays with one leading dimension are one column."""
    if isinstance(value, dict):
        parts = [_columns(v) for v in value.values()]
    elif isinstance(value, (tuple, list)) and value and not _is_plain_list(value):
        parts = [_columns(v) for v in value]
    else:
        arr = _as_array(value)
        if arr is None or arr.ndim == 0:
            return None
        hashes = row_hashes(arr)
        return (hashes, arr) if hashes is not None else None
    if not parts or any(p is None for p in parts) or len({len(p[0]) for p in parts}) != 1:
        return None
    return combine_row_hashes([p[0] for p in parts]), (parts[0][1] if len(parts) == 1 else None)


def _is_plain_list(value) -> bool:
    """A Python list of numbers (a literal batch) rather than a structure of arrays."""
    first = value[0]
    return isinstance(first, (int, float, bool, str, bytes)) or (
        isinstance(first, (list, tuple)) and first and isinstance(first[0], (int, float, bool)))


def _as_array(value):
    import numpy as np

    if isinstance(value, np.ndarray):
        return value
    if isinstance(value, (list, tuple, int, float, bool)):
        try:
            arr = np.asarray(value)
        except Exception:  # noqa: BLE001
            return None
        return arr if arr.dtype != object else None
    eager = _resolve(*TF_EAGER_TENSOR_CLASS)
    if eager is not None and isinstance(value, eager[2]):
        return value.numpy()
    return None


def _record_batch(source: str, items: list, **meta) -> dict | None:
    """items: fed values / element components in order; the first with a
    leading dimension is the sample, the others with the same leading
    dimension its labels."""
    if STATE.sample_rows >= STATE.sample_cap:
        STATE.sample_capped = True
        return None
    cols = []
    for item in items:
        col = _columns(item)
        if col is None:
            continue
        if cols and len(col[0]) != len(cols[0][0]):
            continue
        cols.append(col)
    if not cols:
        return
    n = len(cols[0][0])
    with STATE.lock:
        room = STATE.sample_cap - STATE.sample_rows
        if room <= 0:
            STATE.sample_capped = True
            return
        if n > room:
            STATE.sample_capped = True
            n = room
        rows = [":".join(c[0][i] for c in cols) for i in range(n)]
        STATE.sample_rows += n
        entry = {"source": source, **meta, "rows": rows}
        STATE.sample_batches.append(entry)
        if STATE.sample_values_cap:
            for hashes, arr in cols:
                if arr is None:
                    continue
                for i in range(n):
                    _keep_value(hashes[i], arr[i])
    return entry


def _step_counter() -> int:
    """Optimizer steps so far in this process (eager Keras optimizers' iterations
    plus TF1 train runs / eager TF1 applies)."""
    total = STATE.tf1_train_runs + STATE.tf1_eager_applies
    with _ProbeBusy():
        for opt in list(STATE.keras_optimizers):
            it = getattr(opt, KERAS_ITERATIONS_ATTR, None)
            if it is None or _is_graph_variable(it):
                continue
            try:
                total += int(_eager_value(it))
            except Exception:  # noqa: BLE001
                pass
    return total


def _record_feed(feed_dict, step: int) -> None:
    if not isinstance(feed_dict, dict) or not feed_dict:
        return
    _record_batch("tf1-feed", list(feed_dict.values()), step=step)


def _install_iterator_hook():
    def make(orig):
        def __next__(self):
            element = orig(self)
            if STATE.pid == os.getpid() and not _busy() and not getattr(_DIST_NEXT, "depth", 0):
                try:
                    _record_element(self, element)
                except Exception as exc:  # noqa: BLE001
                    _note_error("iterator_next", exc)
            return element
        return __next__

    mod, cls = TF_DATA_ITERATOR_CLASS
    _patch(mod, cls + ".__next__", make)

    def make_distributed(orig):
        def __next__(self):
            depth = getattr(_DIST_NEXT, "depth", 0)
            _DIST_NEXT.depth = depth + 1
            try:
                element = orig(self)
            finally:
                _DIST_NEXT.depth = depth
            if depth == 0 and STATE.pid == os.getpid() and not _busy():
                try:
                    from tensorflow.python.eager import context  # noqa: PLC0415

                    if context.executing_eagerly() and not STATE.peeking:
                        _record_element(self, _local_batches(element))
                except Exception as exc:  # noqa: BLE001
                    _note_error("distributed_iterator_next", exc)
            return element
        return __next__

    mod, cls = TF_DISTRIBUTED_ITERATOR_CLASS
    _patch(mod, cls + ".__next__", make_distributed)


#: Depth of DistributedIterator.__next__ calls in this thread: the tf.data
#: iterators they use inside are not recorded a second time.
_DIST_NEXT = threading.local()


def _local_batches(element):
    """A tf.distribute element with each PerReplica value replaced by this
    process's rows (its local replicas' batches, concatenated in order)."""
    if isinstance(element, dict):
        return {k: _local_batches(v) for k, v in element.items()}
    if isinstance(element, (tuple, list)):
        return type(element)(_local_batches(v) for v in element) if not hasattr(element, "_fields") \
            else type(element)(*(_local_batches(v) for v in element))
    if type(element).__name__ in TF_PER_REPLICA_CLASS_NAMES:
        import numpy as np

        parts = [np.asarray(v) for v in getattr(element, "values", ())]
        if len(parts) == 1:
            return parts[0]
        return np.concatenate(parts, axis=0) if parts and all(p.ndim for p in parts) else None
    return element


def _record_element(iterator, element) -> None:
    from tensorflow.python.eager import context  # noqa: PLC0415

    if not context.executing_eagerly():
        return  # traced inside a tf.function (Keras fit): symbolic
    if STATE.peeking:
        return  # Keras 3 fit peeking at a batch to build the model
    if isinstance(element, dict):
        items = list(element.values())
    elif isinstance(element, (tuple, list)):
        items = list(element)
    else:
        items = [element]
    if STATE.sample_rows >= STATE.sample_cap:
        STATE.sample_capped = True
        return
    key = getattr(iterator, "_tfdist_probe_iterator", None)
    if key is None:
        STATE.iterators += 1
        key = STATE.iterators
        try:
            iterator._tfdist_probe_iterator = key
        except Exception:  # noqa: BLE001
            pass
    STATE.fetch_seq += 1
    steps_before = _step_counter()
    in_fit = STATE.keras_fit_depth > 0
    entry = _record_batch("iterator", items, iterator=key, seq=STATE.fetch_seq, steps_before=steps_before,
                          in_fit=in_fit)
    if entry is not None and not in_fit:
        # The tape source leaves this step's batch to the iterator source.
        STATE.iterator_step_mark = steps_before


# Eager GradientTape loops ("tape" source).  One context per outermost
# recording tape of a thread: {"model_seen", "sample", "steps_before",
# "labels_seen", "recorded"}.

_TAPES = threading.local()


def _tape_entered(tape) -> None:
    depth = getattr(_TAPES, "depth", 0)
    _TAPES.depth = depth + 1
    if depth:
        return                      # nested tape: same step as the outer one
    _TAPES.ctx = None
    if STATE.pid != os.getpid() or _busy() or STATE.keras_fit_depth > 0:
        return
    from tensorflow.python.eager import context  # noqa: PLC0415

    if not context.executing_eagerly():
        return                      # traced inside a tf.function: symbolic
    _TAPES.ctx = {"model_seen": False, "sample": None, "steps_before": None, "labels_seen": False,
                  "recorded": False}


def _tape_exited(tape) -> None:
    depth = getattr(_TAPES, "depth", 0)
    if depth <= 0:
        return
    _TAPES.depth = depth - 1
    if depth > 1:
        return
    ctx = getattr(_TAPES, "ctx", None)
    _TAPES.ctx = None
    if ctx is not None and ctx["sample"] is not None and not ctx["recorded"]:
        _record_tape_batch(ctx, None)   # no Keras loss saw labels: the samples alone


def _tape_model_input(ctx, args, kwargs) -> None:
    """First Keras model call in a recording tape: its input is the sample batch."""
    ctx["model_seen"] = True
    if STATE.pid != os.getpid() or _busy() or STATE.keras_fit_depth > 0:
        return
    from tensorflow.python.eager import context  # noqa: PLC0415

    if not context.executing_eagerly():
        return
    inputs = args[0] if args else kwargs.get("inputs")
    if inputs is None or not _has_rows(inputs):
        return                      # symbolic or scalar input: nothing to record
    steps_before = _step_counter()
    if STATE.iterator_step_mark == steps_before:
        return                      # a tf.data batch fetched for this step was recorded already
    ctx["sample"] = inputs
    ctx["steps_before"] = steps_before


def _has_rows(value) -> bool:
    """NumPy arrays / eager tensors with a leading dimension (or a structure of
    them), or a literal batch; checked before hashing anything."""
    if _as_array_struct(value) is not None:
        return True
    return isinstance(value, (list, tuple)) and bool(value) and _is_plain_list(value)


def _tape_labels(ctx, y_true) -> None:
    """First Keras loss call after the sample batch, same tape: y_true are its labels."""
    ctx["labels_seen"] = True
    if y_true is None or not _has_rows(y_true):
        return                      # recorded without labels when the tape exits
    _record_tape_batch(ctx, y_true)


def _record_tape_batch(ctx, labels) -> None:
    ctx["recorded"] = True
    items = [ctx["sample"]] + ([labels] if labels is not None else [])
    STATE.tape_batches += 1
    entry = _record_batch("tape", items, seq=STATE.tape_batches, steps_before=ctx["steps_before"])
    if entry is not None:           # labels of another leading dimension are left out
        entry["labeled"] = bool(entry["rows"]) and ":" in entry["rows"][0]
    ctx["sample"] = None            # drop the reference to the user's array


def _current_tape_ctx():
    ctx = getattr(_TAPES, "ctx", None)
    if ctx is None or STATE.pid != os.getpid():
        return None
    return ctx


def _install_tape_hooks():
    def make_enter(orig):
        def __enter__(self):
            result = orig(self)
            try:
                _tape_entered(self)
            except Exception as exc:  # noqa: BLE001
                _note_error("tape_enter", exc)
            return result
        return __enter__

    def make_exit(orig):
        def __exit__(self, typ, value, traceback):
            try:
                return orig(self, typ, value, traceback)
            finally:
                try:
                    _tape_exited(self)
                except Exception as exc:  # noqa: BLE001
                    _note_error("tape_exit", exc)
        return __exit__

    def make_gradient(orig):
        def gradient(self, target, *args, **kwargs):
            grads = orig(self, target, *args, **kwargs)
            if STATE.record_losses and STATE.keras_fit_depth == 0 and not _busy() and STATE.pid == os.getpid():
                try:
                    grads = _record_gradient_target(target, grads)
                except Exception as exc:  # noqa: BLE001
                    _note_error("tape_gradient_loss", exc)
            return grads
        return gradient

    mod, cls = TF_GRADIENT_TAPE_CLASS
    _patch(mod, cls + ".__enter__", make_enter)
    _patch(mod, cls + ".__exit__", make_exit)
    _patch(mod, cls + ".gradient", make_gradient)


def _replicas_dividing_the_loss() -> int:
    """Replicas in sync when called in a tf.distribute replica context (the
    loss there is divided by them), else 1."""
    import tensorflow as tf  # noqa: PLC0415

    if not tf.distribute.has_strategy() or tf.distribute.in_cross_replica_context():
        return 1
    ctx = tf.distribute.get_replica_context()
    return int(getattr(ctx, "num_replicas_in_sync", 1) or 1)


def _records_this_replica() -> bool:
    """One loss per step and process: with several local devices
    (--local-devices) only the process's first replica records its loss, as
    each worker of a cluster records its own."""
    if STATE.local_devices <= 1:
        return True
    import tensorflow as tf  # noqa: PLC0415

    if not tf.distribute.has_strategy() or tf.distribute.in_cross_replica_context():
        return True
    replica = tf.get_static_value(tf.distribute.get_replica_context().replica_id_in_sync_group)
    return replica is None or int(replica) % STATE.local_devices == 0


def _record_gradient_target(target, grads):
    """Record the value of a tape.gradient target (the loss): directly when
    eager; inside a tf.function through a py_function the returned gradients
    depend on, so it runs at every execution of the step."""
    import tensorflow as tf  # noqa: PLC0415

    if not tf.is_tensor(target) or not _records_this_replica():
        return grads
    scale = _replicas_dividing_the_loss()
    if tf.executing_eagerly():
        _record_loss_values(target.numpy() * scale)
        return grads
    value = tf.reduce_mean(tf.cast(target, tf.float32)) * float(scale)

    def note(v):
        _append_loss(float(v.numpy()))
        return v

    recorded = tf.py_function(note, [value], tf.float32)
    flat = tf.nest.flatten(grads)
    if not any(isinstance(g, tf.Tensor) for g in flat):
        return grads
    with tf.control_dependencies([recorded]):
        flat = [tf.identity(g) if isinstance(g, tf.Tensor) else g for g in flat]
    return tf.nest.pack_sequence_as(grads, flat)


def _make_model_call_wrapper(orig):
    def __call__(self, *args, **kwargs):
        ctx = _current_tape_ctx()
        if ctx is not None and not ctx["model_seen"]:
            try:
                _tape_model_input(ctx, args, kwargs)
            except Exception as exc:  # noqa: BLE001
                ctx["model_seen"] = True
                _note_error("tape_model_call", exc)
        return orig(self, *args, **kwargs)
    return __call__


def _labels_hook(ctx, args, kwargs, first_positional: int) -> None:
    if ctx["sample"] is None or ctx["labels_seen"]:
        return
    try:
        y_true = args[first_positional] if len(args) > first_positional else kwargs.get("y_true")
        _tape_labels(ctx, y_true)
    except Exception as exc:  # noqa: BLE001
        ctx["labels_seen"] = True
        _note_error("tape_loss_call", exc)


def _make_loss_call_wrapper(orig):
    def __call__(self, *args, **kwargs):          # Loss.__call__(self, y_true, y_pred, sample_weight=None)
        ctx = _current_tape_ctx()
        if ctx is not None:
            _labels_hook(ctx, args, kwargs, 0)
        return orig(self, *args, **kwargs)
    return __call__


def _make_loss_function_wrapper(orig):
    def loss_function(*args, **kwargs):           # keras.losses.<fn>(y_true, y_pred, ...)
        ctx = _current_tape_ctx()
        if ctx is not None:
            _labels_hook(ctx, args, kwargs, 0)
        return orig(*args, **kwargs)
    return loss_function


def _install_keras_losses(module, group):
    import inspect

    _patch(module.__name__, KERAS_LOSS_CLASS + ".__call__", _make_loss_call_wrapper)
    loss_base = getattr(module, KERAS_LOSS_CLASS, None)
    for name, value in list(vars(module).items()):
        if name.startswith("_") or isinstance(value, type) or not callable(value):
            continue
        if getattr(value, "_tfdist_probe", False):
            continue
        try:
            params = list(inspect.signature(value).parameters)
        except (TypeError, ValueError):
            continue
        if tuple(params[:2]) != KERAS_LOSS_FUNCTION_PARAMS:
            continue
        if loss_base is not None and isinstance(value, loss_base):
            continue
        if _patch(module.__name__, name, _make_loss_function_wrapper):
            wrapper = getattr(module, name)
            if wrapper is not value:
                _replace_keras_aliases(value, wrapper)


def _replace_keras_aliases(orig, wrapper) -> None:
    """Keras API modules already imported that re-export ``orig``."""
    for name, mod in list(sys.modules.items()):
        if mod is None or not (name in KERAS_ALIAS_ROOTS or name.startswith(KERAS_ALIAS_PREFIXES)):
            continue
        try:
            namespace = vars(mod)
        except TypeError:
            continue
        for key, value in list(namespace.items()):
            if value is orig:
                try:
                    setattr(mod, key, wrapper)
                except Exception:  # noqa: BLE001
                    pass


def _multi_worker_model(model) -> bool:
    """The model trains under a tf.distribute strategy spanning several
    processes (its fit shards NumPy inputs itself)."""
    strategy = getattr(model, "distribute_strategy", None) if model is not None else None
    workers = getattr(getattr(strategy, "extended", None), "_num_workers", None)
    return isinstance(workers, int) and workers > 1


def _record_fit(bound) -> None:
    args = bound.arguments
    x, y = args.get("x"), args.get("y")
    if x is None or _as_array_struct(x) is None:
        return
    if _multi_worker_model(args.get("self")):
        # MultiWorkerMirroredStrategy gives each worker its shard of the
        # arrays inside fit (auto-sharding): the rows fit is handed are not
        # the rows this worker trains on, so they are not recorded.
        note = "keras-fit: Model.fit on NumPy inputs under a multi-worker strategy (sharded inside fit)"
        if note not in STATE.sample_skipped:
            STATE.sample_skipped.append(note)
        return
    items = [x] + ([y] if y is not None and _as_array_struct(y) is not None else [])
    epochs = int(args.get("epochs", 1) or 1) - int(args.get("initial_epoch", 0) or 0)
    split = float(args.get("validation_split", 0.0) or 0.0)
    if split:
        import math

        n = len(_as_array_struct(x))
        cut = int(math.floor(n * (1.0 - split)))
        items = [_slice_struct(v, cut) for v in items]
    STATE.fit_samples_calls += 1
    _record_batch("keras-fit", items, fit=STATE.fit_samples_calls, steps_before=_step_counter(),
                  epochs=max(0, epochs), validation_split=split, steps_per_epoch=args.get("steps_per_epoch"),
                  batch_size=args.get("batch_size"))


def _as_array_struct(value):
    """The first array of a NumPy/eager-tensor structure (None: a dataset, generator, ...)."""
    if isinstance(value, dict):
        vals = list(value.values())
        return _as_array_struct(vals[0]) if vals and all(_as_array_struct(v) is not None for v in vals) else None
    if isinstance(value, (list, tuple)):
        return _as_array_struct(value[0]) if value and all(_as_array_struct(v) is not None for v in value) else None
    import numpy as np

    if isinstance(value, np.ndarray):
        return value if value.ndim else None
    eager = _resolve(*TF_EAGER_TENSOR_CLASS)
    if eager is not None and isinstance(value, eager[2]):
        return value if len(value.shape) else None
    return None


def _slice_struct(value, cut):
    if isinstance(value, dict):
        return {k: _slice_struct(v, cut) for k, v in value.items()}
    if isinstance(value, (list, tuple)):
        return type(value)(_slice_struct(v, cut) for v in value)
    return value[:cut]


def _finish_iterator_batches(final_counter: int) -> None:
    """Mark each eager iterator batch ``trained``: the step counter moved
    between its fetch and the next fetch (of any iterator) or the end.
    Tape batches likewise, up to the next batch of any source that noted the
    counter (iterator, tape, keras-fit), so that steps taken by a later
    tf.data loop or fit call never count for a tape without its own step."""
    batches = [b for b in STATE.sample_batches if b.get("source") == "iterator"]
    for cur, nxt in zip(batches, batches[1:] + [None]):
        after = nxt["steps_before"] if nxt is not None else final_counter
        cur["trained"] = after > cur["steps_before"]
    noted = [b for b in STATE.sample_batches if b.get("steps_before") is not None]
    for cur, nxt in zip(noted, noted[1:] + [None]):
        if cur.get("source") == "tape":
            after = nxt["steps_before"] if nxt is not None else final_counter
            cur["trained"] = after > cur["steps_before"]


def _samples_record() -> dict:
    try:
        _finish_iterator_batches(_step_counter())
    except Exception as exc:  # noqa: BLE001
        _note_error("samples_finish", exc)
    sources = sorted({b["source"] for b in STATE.sample_batches})
    return {
        "hash": SAMPLE_HASH,
        "cap": STATE.sample_cap,
        "rows": STATE.sample_rows,
        "capped": STATE.sample_capped,
        "sources": sources,
        "batches": STATE.sample_batches,
        "values": STATE.sample_values,
        "skipped": list(STATE.sample_skipped),
    }


# --------------------------------------------------------------------------
# Keras
# --------------------------------------------------------------------------

def _install_keras_optimizer(module, group):
    cls_name = KERAS_OPTIMIZER_BASES[group]

    def make(orig):
        def __init__(self, *args, **kwargs):
            orig(self, *args, **kwargs)
            try:
                if id(self) not in STATE.keras_optimizer_ids:
                    with STATE.lock:
                        STATE.keras_optimizer_ids.add(id(self))
                        STATE.keras_optimizers.append(self)
            except Exception as exc:  # noqa: BLE001
                _note_error("keras_optimizer_init", exc)
        return __init__

    _patch(module.__name__, cls_name + ".__init__", make)


def _install_keras_model(module, group):
    for method, spec in KERAS_SAVE_METHODS:
        _patch(module.__name__, f"{KERAS_MODEL_CLASS}.{method}",
               _make_file_wrapper(f"Model.{method}", spec, "model"))
    _install_fit(module)
    _patch(module.__name__, KERAS_MODEL_CLASS + ".__call__", _make_model_call_wrapper)


def _step_cap_callback(model_module_name):
    """Build (once) a Keras callback class that stops ``fit`` gracefully after
    TFDIST_PROBE_MAX_STEPS optimizer steps.  Built lazily at the first fit so
    that the probe never imports Keras modules during Keras' own import."""
    cached = _CAP_CLASSES.get(model_module_name)
    if cached is not None:
        return cached
    callback_base = _callback_base(model_module_name)

    class _StepCap(callback_base):
        _supports_tf_logs = True

        def __init__(self, initial_epoch):
            super().__init__()
            self._initial_epoch = initial_epoch or 0
            self._per_call = 1

        def on_train_begin(self, logs=None):
            try:
                params = self.params or {}
                steps, epochs = params.get("steps"), params.get("epochs")
                if steps is None or epochs is None:
                    STATE.planned_unknown = True
                else:
                    STATE.planned_steps += int(steps) * max(0, int(epochs) - int(self._initial_epoch))
                spe = getattr(self.model, "_steps_per_execution", None)
                if spe is None:
                    spe = getattr(self.model, "steps_per_execution", None)   # Keras 3: an int
                if spe is not None:
                    self._per_call = max(1, int(spe.numpy()) if hasattr(spe, "numpy") else int(spe))
            except Exception as exc:  # noqa: BLE001
                _note_error("fit_cap_begin", exc)

        def on_train_batch_end(self, batch, logs=None):
            STATE.cap_done += self._per_call
            if STATE.cap_done >= STATE.max_steps:
                STATE.cap_applied = True
                self.model.stop_training = True

    _CAP_CLASSES[model_module_name] = _StepCap
    return _StepCap


_CAP_CLASSES: dict = {}
_LOSS_CLASSES: dict = {}


def _callback_base(model_module_name):
    import importlib  # noqa: PLC0415

    if model_module_name.endswith(".callbacks"):
        callbacks_name = model_module_name          # given directly (Keras 3)
    else:
        callbacks_name = model_module_name.rsplit(".engine", 1)[0] + ".callbacks"
    return importlib.import_module(callbacks_name).Callback


def _plain_logs(logs) -> dict:
    out = {}
    for key, value in (logs or {}).items():
        try:
            out[str(key)] = float(value.numpy() if hasattr(value, "numpy") else value)
        except Exception:  # noqa: BLE001
            continue
    return out


def _loss_callback(model_module_name):
    """A Keras callback class recording fit's logs (TFDIST_PROBE_LOSSES)."""
    cached = _LOSS_CLASSES.get(model_module_name)
    if cached is not None:
        return cached

    class _LossRecorder(_callback_base(model_module_name)):
        def __init__(self, call):
            super().__init__()
            self._call = call
            self._epoch = 0

        def on_epoch_begin(self, epoch, logs=None):
            self._epoch = int(epoch)

        def on_train_batch_end(self, batch, logs=None):
            try:
                with STATE.lock:
                    STATE.loss_batches.append([self._call, self._epoch, int(batch), _plain_logs(logs)])
                    if len(STATE.loss_batches) >= MAX_LOSS_POINTS:
                        STATE.loss_batches = STATE.loss_batches[::2]
            except Exception as exc:  # noqa: BLE001
                _note_error("fit_loss_batch", exc)

        def on_epoch_end(self, epoch, logs=None):
            try:
                STATE.loss_epochs.append([self._call, int(epoch), _plain_logs(logs)])
            except Exception as exc:  # noqa: BLE001
                _note_error("fit_loss_epoch", exc)

    _LOSS_CLASSES[model_module_name] = _LossRecorder
    return _LossRecorder


def _install_fit(module, cls_name: str = KERAS_MODEL_CLASS, callbacks_module: str | None = None):
    """Wrap Model.fit: record the NumPy samples it is given (keras-fit source)
    and, with TFDIST_PROBE_MAX_STEPS, add the step-cap callback."""
    import inspect

    module_name = module.__name__
    cap_key = callbacks_module or module_name

    def make(orig):
        try:
            sig = inspect.signature(orig)
        except Exception:  # noqa: BLE001
            sig = None

        def fit(*args, **kwargs):
            bound = None
            if STATE.pid == os.getpid() and not _busy():
                try:
                    if sig is None:
                        raise RuntimeError("Model.fit has no signature")
                    bound = sig.bind(*args, **kwargs)
                except Exception as exc:  # noqa: BLE001
                    _note_error("fit_bind", exc)
            if bound is not None:
                try:
                    _record_fit(bound)
                except Exception as exc:  # noqa: BLE001
                    _note_error("fit_samples", exc)
            if bound is not None and STATE.record_losses:
                try:
                    cbs = bound.arguments.get("callbacks")
                    cbs = list(cbs) if cbs else []
                    cbs.append(_loss_callback(cap_key)(STATE.fit_loss_calls))
                    STATE.fit_loss_calls += 1
                    bound.arguments["callbacks"] = cbs
                    args, kwargs = bound.args, bound.kwargs
                except Exception as exc:  # noqa: BLE001
                    _note_error("fit_losses", exc)
            if bound is not None and STATE.max_steps is not None:
                try:
                    cap_cls = _step_cap_callback(cap_key)
                    cbs = bound.arguments.get("callbacks")
                    cbs = list(cbs) if cbs else []
                    cbs.append(cap_cls(bound.arguments.get("initial_epoch", 0)))
                    bound.arguments["callbacks"] = cbs
                    STATE.fit_calls += 1
                    args, kwargs = bound.args, bound.kwargs
                except Exception as exc:  # noqa: BLE001
                    _note_error("fit_cap", exc)
            STATE.keras_fit_depth += 1
            try:
                return orig(*args, **kwargs)
            finally:
                STATE.keras_fit_depth -= 1
        return fit

    _patch(module_name, cls_name + ".fit", make)


def _patch_inherited(owner, attr: str, make_wrapper) -> bool:
    """Wrap ``owner.attr`` even when ``owner`` inherits it (the wrapper is set
    on ``owner`` itself, so only it and its subclasses see it)."""
    try:
        orig = getattr(owner, attr, None)
        if orig is None:
            return False
        if getattr(orig, "_tfdist_probe", False):
            return True
        _install_wrapper(owner, attr, orig, make_wrapper)
        return True
    except Exception as exc:  # noqa: BLE001
        _note_error(f"patch {getattr(owner, '__name__', owner)}.{attr}", exc)
        return False


def _install_keras3_model(module, group):
    """Keras 3: Model.save / save_weights, and Model.__call__ (inherited from
    Layer: wrapped on Model so that plain layer calls are not seen)."""
    for method, spec in KERAS_SAVE_METHODS:
        _patch(module.__name__, f"{KERAS_MODEL_CLASS}.{method}",
               _make_file_wrapper(f"Model.{method}", spec, "model"))
    model_cls = getattr(module, KERAS_MODEL_CLASS, None)
    if isinstance(model_cls, type):
        _patch_inherited(model_cls, "__call__", _make_model_call_wrapper)


def _install_keras3_trainer(module, group):
    """Keras 3: fit is TensorFlowTrainer.fit (Model inherits it); the batch
    it peeks at to build the model is no training sample."""
    _install_fit(module, KERAS3_TRAINER_CLASS, KERAS3_CALLBACKS_MODULE)

    def make_peek(orig):
        def peek(*args, **kwargs):
            STATE.peeking += 1
            try:
                return orig(*args, **kwargs)
            finally:
                STATE.peeking -= 1
        return peek

    for method in KERAS3_PEEK_METHODS:
        _patch(module.__name__, f"{KERAS3_TRAINER_CLASS}.{method}", make_peek)


def _install_h5py(module, group):
    mod_name, cls_name = H5PY_FILE_CLASS
    _patch(mod_name, cls_name + ".__init__", _make_file_wrapper("File.__init__", "arg:1:name", "model"))


def _split_local_cpu(tf_module) -> None:
    """Present the CPU as N logical devices before TensorFlow initialises its
    devices: ``MirroredStrategy()`` replicates over every local GPU, else over
    every logical CPU (``all_local_devices`` in
    tensorflow/python/distribute/mirrored_strategy.py), so the script's own
    strategy then runs N replicas in this process, as on a host with N GPUs."""
    text = os.environ.get(LOCAL_DEVICES_ENV, "").strip()
    if not text.isdigit() or int(text) < 2:
        return
    cpus = tf_module.config.list_physical_devices("CPU")
    tf_module.config.set_logical_device_configuration(
        cpus[0], [tf_module.config.LogicalDeviceConfiguration() for _ in range(int(text))])
    STATE.local_devices = int(text)


def _install_tensorflow(module, group):
    if STATE.seed is not None:
        try:
            module.random.set_seed(STATE.seed)
        except Exception as exc:  # noqa: BLE001
            _note_error("seed", exc)
    try:
        _split_local_cpu(module)
    except Exception as exc:  # noqa: BLE001 - recorded; verify then sees the replicas missing
        _note_error("local_devices", exc)
    _install_variable_tracking()
    _install_session_hooks()
    _install_iterator_hook()
    _install_tape_hooks()
    _install_strategy_tracking()
    for mod_name, qualname, spec, kind in FILE_WRITE_HOOKS:
        _patch(mod_name, qualname, _make_file_wrapper(qualname, spec, kind))


_INSTALLERS = {
    "tensorflow": _install_tensorflow,
    "keras_model": _install_keras_model,
    "keras_optimizer": _install_keras_optimizer,
    "keras_legacy_optimizer": _install_keras_optimizer,
    "keras_losses": _install_keras_losses,
    "keras3_optimizer": _install_keras_optimizer,
    "keras3_model": _install_keras3_model,
    "keras3_trainer": _install_keras3_trainer,
    "h5py": _install_h5py,
}


def _run_hook(name, module):
    group = POST_IMPORT_HOOKS.get(name)
    if group is None:
        return
    try:
        _INSTALLERS[group](module, group)
    except Exception as exc:  # noqa: BLE001
        _note_error(f"install {name}", exc)


class _PostImportFinder:
    """Meta-path finder that runs an installer right after selected modules
    finish executing.  It delegates the actual finding to the other finders
    and only wraps the found loader's ``exec_module``."""

    def __init__(self):
        self._busy = set()

    def find_spec(self, fullname, path=None, target=None):
        if fullname not in POST_IMPORT_HOOKS or fullname in self._busy:
            return None
        self._busy.add(fullname)
        try:
            spec = None
            for finder in sys.meta_path:
                if finder is self or not hasattr(finder, "find_spec"):
                    continue
                try:
                    spec = finder.find_spec(fullname, path, target)
                except Exception:  # noqa: BLE001
                    spec = None
                if spec is not None:
                    break
        finally:
            self._busy.discard(fullname)
        if spec is None or spec.loader is None or not hasattr(spec.loader, "exec_module"):
            return spec
        loader = spec.loader
        orig_exec = loader.exec_module

        def exec_module(module):
            orig_exec(module)
            try:
                del loader.exec_module  # back to the class method
            except Exception:  # noqa: BLE001
                pass
            _run_hook(fullname, module)

        try:
            loader.exec_module = exec_module
        except Exception:  # noqa: BLE001
            return spec
        return spec

    # Python < 3.4 API, unused
    def find_module(self, fullname, path=None):  # pragma: no cover
        return None


# --------------------------------------------------------------------------
# Rank and result record
# --------------------------------------------------------------------------

def _rank_and_size():
    rank = size = None
    source = "default"
    for var in RANK_ENV_VARS:
        if os.environ.get(var, "").strip().isdigit():
            rank, source = int(os.environ[var]), "env:" + var
            break
    for var in SIZE_ENV_VARS:
        if os.environ.get(var, "").strip().isdigit():
            size = int(os.environ[var])
            break
    hvd_rank = hvd_size = None
    for mod_name in ("horovod.tensorflow", "horovod.tensorflow.keras", "horovod.keras"):
        hvd = sys.modules.get(mod_name)
        if hvd is None:
            continue
        try:
            if hvd.is_initialized():
                hvd_rank, hvd_size = int(hvd.rank()), int(hvd.size())
                break
        except Exception:  # noqa: BLE001
            continue
    if rank is None and hvd_rank is not None:
        rank, size, source = hvd_rank, hvd_size, "horovod"
    if rank is None:
        tf_rank, tf_size = _tf_config_rank()
        if tf_rank is not None:
            rank, size, source = tf_rank, tf_size, "tf-config"
    if rank is None:
        rank = 0
    if size is None:
        size = hvd_size if hvd_size is not None else 1
    return rank, size, source, hvd_rank, hvd_size


def _tf_config_rank():
    """(rank, size) from TF_CONFIG: chief first, then the workers by index;
    (None, None) when unset, malformed, or the task is no rank (ps, evaluator)."""
    text = os.environ.get(TF_CONFIG_ENV, "").strip()
    if not text:
        return None, None
    try:
        config = json.loads(text)
        cluster = config.get("cluster") or {}
        task = config.get("task") or {}
        offsets, size = {}, 0
        for kind in TF_CONFIG_RANKED_TASKS:
            offsets[kind] = size
            size += len(cluster.get(kind) or [])
        kind, index = task.get("type"), int(task.get("index", 0))
        if kind not in offsets:
            return None, None
        return offsets[kind] + index, size
    except Exception as exc:  # noqa: BLE001
        _note_error("tf_config", exc)
        return None, None


def _eager_value(var):
    return _local_variable(var).numpy()


def _replica_copies() -> dict:
    """Compare, per trainable tf.distribute variable, the copies this process
    holds on its devices (MirroredStrategy over several local devices): they
    must be bitwise identical after every step (gradients all-reduced)."""
    checked, differing = 0, []
    dist_cls = STATE.distributed_var_class
    if dist_cls is None:
        return {"checked": 0, "differing": []}
    with _ProbeBusy():
        import numpy

        for var in list(STATE.variables):
            if not isinstance(var, dist_cls) or not getattr(var, "trainable", False) or not _is_float_variable(var):
                continue
            copies = list(getattr(var, "_values", None) or ())
            if len(copies) < 2:
                continue
            try:
                first = copies[0].numpy()
                same = all(numpy.array_equal(first, c.numpy()) for c in copies[1:])
            except Exception as exc:  # noqa: BLE001
                _note_error("replica_copies", exc)
                continue
            checked += 1
            if not same:
                differing.append(getattr(var, "name", "?"))
    return {"checked": checked, "differing": differing}


def _collect_variables():
    """([(name, value)] trainable, [(name, value)] other, unreadable count).
    Eager variables in creation order, then each TF1 graph's snapshot."""
    trainable, non_trainable, unreadable = [], [], 0
    with _ProbeBusy():
        for var in list(STATE.variables):
            if id(var) in STATE.component_ids or _is_graph_variable(var):
                continue
            try:
                value = _eager_value(var)
            except Exception:  # noqa: BLE001
                unreadable += 1
                continue
            name = getattr(var, "name", "?")
            if getattr(var, "trainable", False) and _is_float_variable(var):
                trainable.append((name, value))
            else:
                non_trainable.append((name, value))
        # TF1 graphs: sessions still open at exit, then stored snapshots.
        for ref in list(STATE.sessions):
            sess = ref()
            if sess is not None:
                _snapshot_session(sess)
    for key in STATE.graph_order:
        snap = STATE.graph_snapshots[key]
        trainable.extend(zip(snap["names"], snap["values"]))
    return trainable, non_trainable, unreadable


def _optimizer_info():
    keras = []
    snap_iters = {}
    for snap in STATE.graph_snapshots.values():
        snap_iters.update(snap.get("opt_iters", {}))
    with _ProbeBusy():
        for opt in list(STATE.keras_optimizers):
            entry = {"class": type(opt).__name__, "iterations": None}
            try:
                it = getattr(opt, KERAS_ITERATIONS_ATTR, None)
                if it is None:
                    entry["iterations"] = 0
                elif not _is_graph_variable(it):
                    entry["iterations"] = int(_eager_value(it))
                elif str(id(opt)) in snap_iters:
                    entry["iterations"] = snap_iters[str(id(opt))]
            except Exception as exc:  # noqa: BLE001
                _note_error("optimizer_iterations", exc)
            keras.append(entry)
    global_steps = [s["global_step"] for s in STATE.graph_snapshots.values() if s.get("global_step") is not None]
    global_step = max(global_steps) if global_steps else None
    keras_max = max((e["iterations"] or 0 for e in keras), default=0)
    steps = max(keras_max, STATE.tf1_train_runs, STATE.tf1_eager_applies)
    source = None
    if steps:
        if steps == keras_max:
            source = "keras-iterations"
        elif steps == STATE.tf1_train_runs:
            source = "tf1-session-runs"
        else:
            source = "tf1-eager-apply"
    elif global_step:
        steps, source = global_step, "global-step"
    return {
        "steps": steps,
        "source": source,
        "keras": keras,
        "tf1_train_runs": STATE.tf1_train_runs,
        "tf1_train_ops": len(STATE.train_ops),
        "tf1_eager_applies": STATE.tf1_eager_applies,
        "global_step": global_step,
    }


def _exists(path: str) -> bool:
    """The path, or files it is the prefix of (a TF checkpoint prefix
    ``ckpt/model`` is ``ckpt/model.index`` + ``ckpt/model.data-*``)."""
    if "://" in path:
        return True
    if os.path.lexists(path):
        return True
    import glob

    return bool(glob.glob(glob.escape(path) + ".*"))


def build_record() -> dict:
    rank, size, source, hvd_rank, hvd_size = _rank_and_size()
    record = {
        "version": RECORD_VERSION,
        "rank": rank,
        "size": size,
        "rank_source": source,
        "hvd_rank": hvd_rank,
        "hvd_size": hvd_size,
        "pid": os.getpid(),
        "host": socket.gethostname(),
        "script": STATE.script,
        "cwd": STATE.start_cwd,
        "exit_code": STATE.exit_code,
        "exit_how": STATE.exit_how,
        "exception": STATE.exception,
        "elapsed_s": round(time.time() - STATE.start, 3),
        "tensorflow_imported": "tensorflow" in sys.modules,
    }
    try:
        trainable, non_trainable, unreadable = _collect_variables()
        sha, fsum, items = digest_arrays([v for _, v in trainable])
        nsha, _, _ = digest_arrays([v for _, v in non_trainable])
        record["variables"] = {
            "trainable_count": len(trainable),
            "trainable_sha256": sha,
            "trainable_sum": fsum,
            "trainable": [
                {"name": name, "shape": list(getattr(value, "shape", ())),
                 "dtype": str(getattr(value, "dtype", "?")), "digest": digest}
                for (name, value), digest in zip(trainable, items)
            ],
            "non_trainable_count": len(non_trainable),
            "non_trainable_sha256": nsha,
            "unreadable": unreadable,
            "tf1_graphs": len(STATE.graph_order),
        }
    except Exception as exc:  # noqa: BLE001
        _note_error("variables", exc)
        record["variables"] = None
    try:
        record["optimizer"] = _optimizer_info()
    except Exception as exc:  # noqa: BLE001
        _note_error("optimizer", exc)
        record["optimizer"] = None
    record["files"] = []
    for entry in list(STATE.files.values()):
        entry = dict(entry)
        try:
            entry["exists_at_exit"] = _exists(entry["path"])
        except Exception:  # noqa: BLE001
            entry["exists_at_exit"] = None
        entry["multi_worker_temp"] = bool(MULTI_WORKER_TEMP_DIR.search(entry["path"]))
        record["files"].append(entry)
    try:
        record["replica_copies"] = _replica_copies()
        record["local_devices"] = STATE.local_devices
    except Exception as exc:  # noqa: BLE001
        _note_error("replica_copies", exc)
    try:
        record["strategies"] = _strategies_info()
    except Exception as exc:  # noqa: BLE001
        _note_error("strategies", exc)
        record["strategies"] = []
    record["steps_cap"] = {
        "cap": STATE.max_steps,
        "applied": STATE.cap_applied,
        "fit_calls": STATE.fit_calls,
        "planned_steps": None if (STATE.planned_unknown or not STATE.fit_calls) else STATE.planned_steps,
    }
    try:
        record["samples"] = _samples_record()
    except Exception as exc:  # noqa: BLE001
        _note_error("samples", exc)
        record["samples"] = None
    if STATE.record_losses:
        record["losses"] = {"steps": [list(p) for p in STATE.loss_steps], "stride": STATE.loss_stride,
                            "seen": STATE.loss_seen, "fit_batches": STATE.loss_batches,
                            "fit_epochs": STATE.loss_epochs}
    record["probe_errors"] = list(STATE.errors)
    return record


def write_record() -> str | None:
    """Write this process's record once; returns its path."""
    if STATE.written or STATE.pid != os.getpid():
        return None
    STATE.written = True
    try:
        _drop_unchanged_in_place()
        record = build_record()
    except Exception as exc:  # noqa: BLE001
        _note_error("build_record", exc)
        record = {"version": RECORD_VERSION, "rank": 0, "exit_code": STATE.exit_code,
                  "probe_errors": list(STATE.errors)}
    out_dir = STATE.probe_dir
    if not out_dir:
        sys.stderr.write("tfdist probe: " + json.dumps({
            "rank": record.get("rank"),
            "exit_code": record.get("exit_code"),
            "steps": (record.get("optimizer") or {}).get("steps"),
            "trainable_sha256": (record.get("variables") or {}).get("trainable_sha256"),
            "files": [f["path"] for f in record.get("files", [])],
        }) + "\n")
        return None
    try:
        with _ProbeBusy():
            os.makedirs(out_dir, exist_ok=True)
            name = f"rank-{record.get('rank', 0)}.json"
            path = os.path.join(out_dir, name)
            if os.path.exists(path):
                path = os.path.join(out_dir, f"rank-{record.get('rank', 0)}-pid{os.getpid()}.json")
            tmp = path + ".tmp"
            with open(tmp, "w", encoding="utf-8") as fh:
                json.dump(record, fh, indent=1, default=str)
            os.replace(tmp, path)
        return path
    except Exception as exc:  # noqa: BLE001
        sys.stderr.write(f"tfdist probe: could not write record: {exc}\n")
        return None


def _atexit_write():
    if STATE.exit_code is None:
        STATE.exit_code, STATE.exit_how = 0, "atexit"
    write_record()


# --------------------------------------------------------------------------
# Entry point
# --------------------------------------------------------------------------

def _wrap_os_exit():
    """Scripts sometimes end with os._exit() (skipping atexit): write the
    record first.  Forked children are ignored (write_record checks the pid)."""
    orig = os._exit
    if getattr(orig, "_tfdist_probe", False):
        return

    def _exit(status):
        if os.getpid() == STATE.pid and not STATE.written:
            try:
                STATE.exit_code, STATE.exit_how = int(status), "os._exit"
                write_record()
            except Exception:  # noqa: BLE001
                pass
        orig(status)

    _exit._tfdist_probe = True
    os._exit = _exit


def install() -> None:
    """Install the audit hook and post-import hooks (idempotent)."""
    if STATE.installed:
        return
    STATE.installed = True
    STATE.probe_dir = os.environ.get(PROBE_DIR_ENV) or None
    if STATE.probe_dir:
        STATE.probe_dir = os.path.abspath(STATE.probe_dir)
    cap = os.environ.get(MAX_STEPS_ENV, "").strip()
    if cap.isdigit() and int(cap) > 0:
        STATE.max_steps = int(cap)
    rows = os.environ.get(SAMPLE_ROWS_ENV, "").strip()
    if rows.isdigit():
        STATE.sample_cap = int(rows)
    values = os.environ.get(SAMPLE_VALUES_ENV, "").strip()
    if values.isdigit():
        STATE.sample_values_cap = int(values)
    STATE.record_losses = os.environ.get(LOSSES_ENV, "").strip() == "1"
    _seed_generators(os.environ.get(SEED_ENV, "").strip())
    STATE.ignore_prefixes = _compute_ignore_prefixes()
    sys.addaudithook(_audit_hook)
    _wrap_os_exit()
    sys.meta_path.insert(0, _PostImportFinder())
    for name in list(POST_IMPORT_HOOKS):
        if name in sys.modules:
            _run_hook(name, sys.modules[name])
    atexit.register(_atexit_write)


def _seed_generators(text: str) -> None:
    """SEED_ENV: Python's and NumPy's generators now, TensorFlow's when it is
    imported (importing it here would come before the script's own set-up)."""
    if not text.isdigit():
        return
    STATE.seed = int(text) + _rank_and_size()[0]
    import random

    random.seed(STATE.seed)    # Keras 3 draws its initializers' seeds from here
    try:
        import numpy
    except ImportError:
        return
    numpy.random.seed(STATE.seed % 2**32)


def _restore_environment():
    """Undo the PYTHONPATH entry tfdist added to import this probe, so the
    script (and its child processes) see their usual environment."""
    added = os.environ.pop(ADDED_PATH_ENV, None)
    if ORIG_PYTHONPATH_ENV in os.environ:
        orig = os.environ.pop(ORIG_PYTHONPATH_ENV)
        if orig:
            os.environ["PYTHONPATH"] = orig
        else:
            os.environ.pop("PYTHONPATH", None)
    if added:
        norm = os.path.abspath(added)
        sys.path[1:] = [p for p in sys.path[1:] if os.path.abspath(p or ".") != norm]


def _exec_script(script: str, as_file: str | None, args: list[str]) -> None:
    import importlib.machinery
    import importlib.util

    shown = as_file or script
    with open(script, "rb") as fh:
        source = importlib.util.decode_source(fh.read())
    code = compile(source, script, "exec", dont_inherit=True)
    sys.argv[:] = [shown, *args]
    sys.path[0] = os.path.dirname(os.path.abspath(shown))
    main = types.ModuleType("__main__")
    main.__dict__.update({
        "__file__": shown,
        "__cached__": None,
        "__loader__": importlib.machinery.SourceFileLoader("__main__", shown),
        "__spec__": None,
        "__package__": None,
        "__builtins__": __builtins__,
    })
    sys.modules["__main__"] = main
    exec(code, main.__dict__)  # noqa: S102 - this is the point


def _trim_traceback(tb):
    """Drop the probe's own frames from the top of a traceback."""
    here = os.path.abspath(__file__)
    while tb is not None and os.path.abspath(tb.tb_frame.f_code.co_filename) == here:
        tb = tb.tb_next
    return tb


def _exit_code_of(code) -> int:
    if code is None:
        return 0
    if isinstance(code, int):
        return code
    return 1


USAGE = "usage: python -m tfdist.runtime.probe [--as-file ORIGINAL] SCRIPT [ARGS...]\n"


def main(argv: list[str] | None = None) -> int:
    argv = list(sys.argv[1:] if argv is None else argv)
    as_file = None
    if argv[:1] == ["--as-file"] and len(argv) >= 2:
        as_file, argv = argv[1], argv[2:]
    if argv[:1] == ["--"]:
        argv = argv[1:]
    if not argv or argv[0] in ("-h", "--help"):
        sys.stderr.write(USAGE)
        return 2 if not argv else 0
    script, args = argv[0], argv[1:]
    if not os.path.isfile(script):
        sys.stderr.write(f"tfdist probe: no such script: {script}\n")
        return 2
    STATE.script = os.path.abspath(as_file or script)
    _restore_environment()
    install()
    try:
        _exec_script(script, as_file, args)
    except SystemExit as exc:
        STATE.exit_code, STATE.exit_how = _exit_code_of(exc.code), "sys.exit"
        write_record()
        raise
    except KeyboardInterrupt:
        STATE.exit_code, STATE.exit_how, STATE.exception = 130, "exception", "KeyboardInterrupt"
        write_record()
        raise
    except BaseException as exc:  # noqa: BLE001 - reported like Python does
        STATE.exit_code, STATE.exit_how = 1, "exception"
        STATE.exception = f"{type(exc).__name__}: {exc}"[:1000]
        write_record()
        try:
            trimmed = _trim_traceback(exc.__traceback__)
            exc.__traceback__ = trimmed  # the default hook prints exc.__traceback__
            sys.excepthook(type(exc), exc, trimmed)
        except Exception:  # noqa: BLE001
            import traceback
            traceback.print_exception(type(exc), exc, exc.__traceback__)
        return 1
    STATE.exit_code, STATE.exit_how = 0, "returned"
    write_record()
    return 0


if __name__ == "__main__":
    # Run the copy imported under its real name so that state is shared with
    # anything that imports tfdist.runtime.probe.
    from tfdist.runtime.probe import main as _main

    raise SystemExit(_main())
