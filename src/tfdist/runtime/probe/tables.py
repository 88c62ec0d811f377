"""Tables: every TensorFlow / Keras / h5py name the probe relies on.
Update these when the libraries move things around."""
from __future__ import annotations

import re

#: Environment variables naming this process's rank / world size, in order.
RANK_ENV_VARS = ("HOROVOD_RANK", "OMPI_COMM_WORLD_RANK", "PMI_RANK", "PMIX_RANK")
SIZE_ENV_VARS = ("HOROVOD_SIZE", "OMPI_COMM_WORLD_SIZE", "PMI_SIZE")

#: tf.distribute: TF_CONFIG (its task gives the rank, its cluster the size).
TF_CONFIG_ENV = "TF_CONFIG"
#: In rank order: the chief, the workers, then the parameter servers
#: (ParameterServerStrategy clusters: tfdist verify --strategy parameter-server
#: reads each task's record); evaluator tasks are not ranks.
TF_CONFIG_RANKED_TASKS = ("chief", "worker", "ps")
#: tf.distribute.Server.join: a worker or parameter-server task serves the
#: cluster in it until it is killed (its record is written as it starts).
TF_SERVER_JOIN = ("tensorflow.python.training.server_lib", "Server.join")

#: TensorFlow's seed functions: (module, get_seed, set_random_seed).  The
#: v2 ``tf.random.set_seed`` and Keras's ``set_random_seed`` call the v1
#: function through this module; random ops and tf.data ask ``get_seed``.
TF_RANDOM_SEED = ("tensorflow.python.framework.random_seed", "get_seed", "set_random_seed")

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
