"""Tables of the TensorFlow / Keras / Horovod API names tfdist understands.

Every name here is *canonical*: the qualified name LibCST resolves (through
whatever import style the user wrote) is first normalised by
:func:`tfdist.engine.names.canonical`, which maps ``tensorflow.keras.X``,
``tensorflow.compat.v1.X``, ``tf_keras.X`` ... onto one spelling. Rules look
names up in these tables; they never compare dotted-name prefixes as strings.
"""
from __future__ import annotations

# Canonical spellings: longest prefix first. Applied repeatedly, so
# ``tensorflow.compat.v1.keras.X`` becomes ``keras.X``.
ALIAS_PREFIXES = (
    ("tensorflow.compat.v1.", "tensorflow."),
    ("tensorflow.compat.v2.", "tensorflow."),
    ("tensorflow.python.keras.", "keras."),
    ("tensorflow.keras.", "keras."),
    ("tf_keras.", "keras."),
    ("tensorflow.optimizers.", "keras.optimizers."),
    ("keras.src.", "keras."),
    ("keras.optimizers.experimental.", "keras.optimizers."),
    ("keras.optimizer_v2.", "keras.optimizers.legacy."),
    ("keras.engine.training.", "keras."),
    ("keras.engine.sequential.", "keras."),
    ("keras.models.", "keras."),
)
ALIAS_EXACT = {
    "tensorflow.keras": "keras",
    "tf_keras": "keras",
    "tensorflow.compat.v1": "tensorflow",
    "tensorflow.compat.v2": "tensorflow",
}
# keras.models.X and keras.X name the same classes/functions.
KERAS_MODEL_CLASSES = {"keras.Model", "keras.Sequential"}

# --- Keras optimizers -------------------------------------------------------
# class name -> default learning rate (Keras 2.x defaults). The learning rate
# is the first positional parameter of every one of them.
KERAS_OPTIMIZER_DEFAULT_LR = {
    "SGD": 0.01,
    "Adam": 0.001,
    "AdamW": 0.001,
    "RMSprop": 0.001,
    "Adagrad": 0.001,
    "Adadelta": 0.001,
    "Adamax": 0.001,
    "Nadam": 0.001,
    "Ftrl": 0.001,
    "Lion": 0.0001,
    "Adafactor": 0.001,
}
KERAS_OPTIMIZERS = {f"keras.optimizers.{n}": lr for n, lr in KERAS_OPTIMIZER_DEFAULT_LR.items()}
KERAS_LEGACY_OPTIMIZERS = {
    f"keras.optimizers.legacy.{n}": lr for n, lr in KERAS_OPTIMIZER_DEFAULT_LR.items()
}
# compile(optimizer="adam"): Keras' string identifiers.
KERAS_OPTIMIZER_STRINGS = {
    "sgd": "SGD",
    "adam": "Adam",
    "adamw": "AdamW",
    "rmsprop": "RMSprop",
    "adagrad": "Adagrad",
    "adadelta": "Adadelta",
    "adamax": "Adamax",
    "nadam": "Nadam",
    "ftrl": "Ftrl",
}
KERAS_DEFAULT_COMPILE_OPTIMIZER = "rmsprop"
KERAS_OPTIMIZER_BASES = {
    "keras.optimizers.Optimizer",
    "keras.optimizers.legacy.Optimizer",
}

# Learning-rate schedules: where their initial learning rate is.
# name -> (keyword, positional index) of the value to scale.
KERAS_LR_SCHEDULES = {
    "keras.optimizers.schedules.ExponentialDecay": ("initial_learning_rate", 0),
    "keras.optimizers.schedules.InverseTimeDecay": ("initial_learning_rate", 0),
    "keras.optimizers.schedules.PolynomialDecay": ("initial_learning_rate", 0),
    "keras.optimizers.schedules.CosineDecay": ("initial_learning_rate", 0),
    "keras.optimizers.schedules.CosineDecayRestarts": ("initial_learning_rate", 0),
    "keras.optimizers.schedules.PiecewiseConstantDecay": ("values", 1),
}
KERAS_LR_SCHEDULE_BASES = {"keras.optimizers.schedules.LearningRateSchedule"}

# --- TF1 optimizers (tf.train.* / tf.compat.v1.train.*) ----------------------
# name -> default learning rate (None: required argument).
TF1_OPTIMIZERS = {
    "tensorflow.train.GradientDescentOptimizer": None,
    "tensorflow.train.MomentumOptimizer": None,
    "tensorflow.train.AdamOptimizer": 0.001,
    "tensorflow.train.AdagradOptimizer": None,
    "tensorflow.train.AdagradDAOptimizer": None,
    "tensorflow.train.AdadeltaOptimizer": 0.001,
    "tensorflow.train.RMSPropOptimizer": None,
    "tensorflow.train.FtrlOptimizer": None,
    "tensorflow.train.ProximalGradientDescentOptimizer": None,
    "tensorflow.train.ProximalAdagradOptimizer": None,
}
TF1_OPTIMIZER_BASES = {"tensorflow.train.Optimizer"}

# --- Models, layers, callbacks ------------------------------------------------
KERAS_MODEL_FACTORIES = {"keras.load_model", "keras.clone_model", "keras.model_from_json"}
KERAS_APPLICATIONS_PREFIX = "keras.applications."
KERAS_CALLBACK_BASES = {"keras.callbacks.Callback"}
TF_MODULE_BASES = {"tensorflow.Module", "keras.layers.Layer"}

# Callbacks that write files: they run on rank 0 only.
KERAS_RANK0_CALLBACKS = {
    "keras.callbacks.ModelCheckpoint",
    "keras.callbacks.TensorBoard",
    "keras.callbacks.CSVLogger",
}
# Callbacks driven by a metric: they must come after MetricAverageCallback.
KERAS_METRIC_CALLBACKS = {
    "keras.callbacks.EarlyStopping",
    "keras.callbacks.ReduceLROnPlateau",
}
KERAS_SAVE_FUNCTIONS = {"keras.save_model", "tensorflow.saved_model.save"}
# Model methods that write files.
KERAS_SAVE_METHODS = {"save", "save_weights"}
# Model methods that take verbose= and print progress.
KERAS_VERBOSE_METHODS = {"evaluate", "predict"}
KERAS_FIT_METHODS = {"fit", "fit_generator"}
# Model methods that only print.
KERAS_PRINT_METHODS = {"summary"}

# --- Data -------------------------------------------------------------------
DATASET_SOURCES = {
    "tensorflow.data.Dataset.from_tensor_slices",
    "tensorflow.data.Dataset.from_tensors",
    "tensorflow.data.Dataset.from_generator",
    "tensorflow.data.Dataset.range",
    "tensorflow.data.Dataset.list_files",
    "tensorflow.data.Dataset.zip",
    "tensorflow.data.TFRecordDataset",
    "tensorflow.data.TextLineDataset",
    "tensorflow.data.FixedLengthRecordDataset",
    "tensorflow.data.experimental.make_csv_dataset",
}
# Sources whose number of elements TensorFlow knows when the pipeline is
# built (Dataset.cardinality()): sharded with an equal take, which costs
# nothing per element.
KNOWN_SIZE_SOURCES = {
    "tensorflow.data.Dataset.from_tensor_slices",
    "tensorflow.data.Dataset.from_tensors",
    "tensorflow.data.Dataset.range",
}
# Sources whose elements are files: sharded by file, nothing dropped (an
# equal-count cut would drop whole files).
FILE_LEVEL_SOURCES = {"tensorflow.data.Dataset.list_files"}
# Dataset methods that return a dataset (the chain is followed through them).
DATASET_METHODS = {
    "batch", "padded_batch", "shuffle", "repeat", "map", "filter", "prefetch",
    "cache", "take", "skip", "unbatch", "flat_map", "interleave", "shard",
    "apply", "with_options", "enumerate", "concatenate", "window",
    "ragged_batch", "rebatch", "map_with_legacy_function",
}
DATASET_ITERATOR_FUNCTIONS = {
    "tensorflow.data.make_one_shot_iterator",
    "tensorflow.data.make_initializable_iterator",
}

# --- TF1 sessions -------------------------------------------------------------
TF1_SESSIONS = {"tensorflow.Session", "tensorflow.InteractiveSession"}
TF1_MONITORED_SESSIONS = {
    "tensorflow.train.MonitoredTrainingSession",
    "tensorflow.train.MonitoredSession",
    "tensorflow.train.SingularMonitoredSession",
}
TF1_INITIALIZERS = {
    "tensorflow.global_variables_initializer",
    "tensorflow.initializers.global_variables",
    "tensorflow.initialize_all_variables",
}
TF1_STOP_AT_STEP_HOOK = "tensorflow.train.StopAtStepHook"
TF1_SAVER = "tensorflow.train.Saver"
TF1_FILE_WRITER = "tensorflow.summary.FileWriter"
TF1_CONFIG_PROTO = "tensorflow.ConfigProto"

# --- TF2 custom loops -----------------------------------------------------------
GRADIENT_TAPE = "tensorflow.GradientTape"
TF_FUNCTION = "tensorflow.function"
TF_VARIABLE = "tensorflow.Variable"
TF2_FILE_WRITER = "tensorflow.summary.create_file_writer"
TF2_CHECKPOINT = "tensorflow.train.Checkpoint"
TF2_CHECKPOINT_MANAGER = "tensorflow.train.CheckpointManager"
# Methods of these objects that write files.
CHECKPOINT_SAVE_METHODS = {"save", "write"}

# --- Already distributed / not convertible ----------------------------------
DISTRIBUTED_MODULE_ROOTS = ("horovod",)
TF_DISTRIBUTE_PREFIX = "tensorflow.distribute."
ESTIMATOR_PREFIX = "tensorflow.estimator."

# Calls allowed inside a print() that tfdist moves under a rank-0 guard: they
# cannot run a collective operation, so guarding them can never deadlock.
PURE_CALLS = {
    "len", "str", "int", "float", "round", "repr", "format", "abs", "min",
    "max", "sum", "bool", "list", "tuple", "dict", "sorted",
}
PURE_METHODS = {"numpy", "result", "format", "item", "mean", "std", "sum", "min", "max", "join", "tolist"}
