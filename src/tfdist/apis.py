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
    # where Keras 2.x kept plot_model and model_to_dot (tf.keras.utils.vis_utils too)
    ("keras.utils.vis_utils.", "keras.utils."),
    # the standalone package Keras 2.x's keras.preprocessing re-exported
    ("keras_preprocessing.", "keras.preprocessing."),
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
# compile(optimizer="adam"): Keras' string identifiers are the class names in
# lower case -- derived from the one class table, so a class added there
# (Lion, Adafactor...) is also known by its string.
KERAS_OPTIMIZER_STRINGS = {name.lower(): name for name in KERAS_OPTIMIZER_DEFAULT_LR}
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

# Learning-rate schedules counted in optimizer steps: which of their
# arguments are step counts (keyword, positional index; None: keyword only).
# Each process of a data-parallel run takes 1/N of the original's steps, so
# these are divided by N wherever the learning rate is scaled, and the
# schedule decays at the same share of the data as in the original.
STEP_KEYED_SCHEDULE_ARGS = {
    "keras.optimizers.schedules.ExponentialDecay": (("decay_steps", 1),),
    "keras.optimizers.schedules.InverseTimeDecay": (("decay_steps", 1),),
    "keras.optimizers.schedules.PolynomialDecay": (("decay_steps", 1),),
    "keras.optimizers.schedules.CosineDecay": (("decay_steps", 1), ("warmup_steps", None)),
    "keras.optimizers.schedules.CosineDecayRestarts": (("first_decay_steps", 1),),
    "keras.optimizers.schedules.PiecewiseConstantDecay": (("boundaries", 0),),
    "tensorflow.train.exponential_decay": (("decay_steps", 2),),
    "tensorflow.train.inverse_time_decay": (("decay_steps", 2),),
    "tensorflow.train.natural_exp_decay": (("decay_steps", 2),),
    "tensorflow.train.polynomial_decay": (("decay_steps", 2),),
    "tensorflow.train.cosine_decay": (("decay_steps", 2),),
    "tensorflow.train.cosine_decay_restarts": (("first_decay_steps", 2),),
    "tensorflow.train.linear_cosine_decay": (("decay_steps", 2),),
    "tensorflow.train.noisy_linear_cosine_decay": (("decay_steps", 2),),
    "tensorflow.train.piecewise_constant": (("boundaries", 1),),
}

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
# Functions returning the graph's one global step (the same variable however
# often called): a learning-rate warmup may call them again to count steps.
TF1_GLOBAL_STEP_FUNCTIONS = {"tensorflow.train.get_or_create_global_step", "tensorflow.train.get_global_step"}

# --- Models, layers, callbacks ------------------------------------------------
KERAS_MODEL_FACTORIES = {"keras.load_model", "keras.clone_model", "keras.model_from_json"}
# Factories whose model holds the weights of a file (the same on every worker, whatever the scope).
KERAS_MODEL_LOADERS = {"keras.load_model"}
KERAS_APPLICATIONS_PREFIX = "keras.applications."
# Pretrained-model libraries of Keras: their model classes (and the models
# their ``from_preset`` builds) are Keras models -- the task's new head
# randomly initialised -- except the preprocessing pieces named here.
KERAS_PRESET_MODEL_PREFIXES = ("keras_hub.models.", "keras_nlp.models.", "keras_cv.models.")
KERAS_PRESET_NON_MODELS = ("Tokenizer", "Preprocessor", "Converter", "Augmenter", "Sampler")
KERAS_CALLBACK_BASES = {"keras.callbacks.Callback"}
TF_MODULE_BASES = {"tensorflow.Module", "keras.layers.Layer"}

# Callbacks that write files: they run on rank 0 only.
# Callbacks that set the optimizer's rate each epoch from a function of the
# script's -> (keyword, position) of that function. Its rates replace the
# scaled one, so they are scaled in turn.
KERAS_EPOCH_RATE_CALLBACKS = {"keras.callbacks.LearningRateScheduler": ("schedule", 0)}
KERAS_RANK0_CALLBACKS = {
    "keras.callbacks.ModelCheckpoint",
    "keras.callbacks.TensorBoard",
    "keras.callbacks.CSVLogger",
}
# Callbacks of other libraries that report or save: they are callbacks (a
# Keras kind), and run on rank 0 only like the ones above. A wandb callback
# that only logs needs no edit: its run does nothing off rank 0
# (TRACKER_QUIET_RUNS); its checkpoint callback writes files.
TRACKER_KERAS_CALLBACKS = {
    "wandb.keras.WandbModelCheckpoint", "wandb.integration.keras.WandbModelCheckpoint",
    "mlflow.keras.MlflowCallback", "mlflow.tensorflow.MlflowCallback",
    "mlflow.keras.callback.MlflowCallback", "mlflow.tensorflow.callback.MlflowCallback",
    "tqdm.keras.TqdmCallback",
}
KERAS_RANK0_CALLBACKS |= TRACKER_KERAS_CALLBACKS
# Of those, the ones that are a ModelCheckpoint (a file path first): under
# tf.distribute each worker writes its own file, as ModelCheckpoint does.
TRACKER_CHECKPOINT_CALLBACKS = {"wandb.keras.WandbModelCheckpoint", "wandb.integration.keras.WandbModelCheckpoint"}
# Callbacks driven by a metric: they must come after MetricAverageCallback.
KERAS_METRIC_CALLBACKS = {
    "keras.callbacks.EarlyStopping",
    "keras.callbacks.ReduceLROnPlateau",
}
KERAS_SAVE_FUNCTIONS = {"keras.save_model", "keras.saving.save_model", "tensorflow.saved_model.save"}
# Model methods that write files (Keras 3's export() writes a SavedModel).
KERAS_SAVE_METHODS = {"save", "save_weights", "export"}
# Keras's symbolic inputs: an object called on one is a Keras layer or model
# (``img = generator(z)`` of ``z = Input(shape=(100,))``), whatever built it.
KERAS_SYMBOLIC_INPUTS = {"keras.Input", "keras.layers.Input"}
# Model methods that take verbose= and print progress.
KERAS_VERBOSE_METHODS = {"evaluate", "predict"}
KERAS_FIT_METHODS = {"fit", "fit_generator"}
# Model.fit(x, y, batch_size, epochs, verbose, callbacks, validation_split,
# validation_data, shuffle, ...): positions of the arguments tfdist reads.
KERAS_FIT_POSITIONS = {"x": 0, "y": 1, "verbose": 4, "callbacks": 5, "validation_data": 7, "shuffle": 8,
                       "sample_weight": 10, "steps_per_epoch": 12, "validation_steps": 13}
# Model.fit_generator(generator, steps_per_epoch, epochs, verbose, callbacks,
# validation_data, validation_steps, validation_freq, class_weight,
# max_queue_size, workers, use_multiprocessing, shuffle, ...) (Keras 2): its
# data is called generator=; it takes no y, sample_weight or batch_size.
KERAS_FIT_GENERATOR_POSITIONS = {"x": 0, "steps_per_epoch": 1, "verbose": 3, "callbacks": 4, "validation_data": 5,
                                 "validation_steps": 6, "shuffle": 12}
KERAS_FIT_KEYWORDS = {"x": ("x", "generator")}
# Optimizer methods that apply gradients (one optimizer step) -> (keyword,
# position) of what names the updated variables, and whether that argument
# pairs them with the gradients: apply_gradients(zip(grads, vars)) (Keras 2
# and 3, TF1), Keras 3's apply(grads, vars). ``apply`` is a common method
# name (Dataset.apply): it counts only on a known Keras optimizer.
OPTIMIZER_APPLY_METHODS = {"apply_gradients": ("grads_and_vars", 0, True), "apply": ("trainable_variables", 1, False)}
GENERIC_APPLY_METHODS = {"apply"}
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
    "tensorflow.data.experimental.CsvDataset",
}
# Dataset.zip(datasets): one element of each dataset of a tuple/list/dict
# (or, TF >= 2.13, of its positional arguments) per element. A source as
# far as sharding goes (its elements are pairs), but batched where its
# datasets are: zip((a.batch(n), b.batch(n))) gives batches of n.
DATASET_ZIP = "tensorflow.data.Dataset.zip"
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
    "scan", "group_by_window", "bucket_by_sequence_length", "rejection_resample",
    "unique", "ignore_errors",
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
# Keras 3 picks its backend from this environment variable (or
# keras.config.set_backend): one other than TensorFlow trains with JAX or
# PyTorch, which neither engine distributes.
KERAS_BACKEND_VARIABLE = "KERAS_BACKEND"
KERAS_BACKEND_SETTERS = {"keras.config.set_backend"}
KERAS_TENSORFLOW_BACKEND = "tensorflow"
ENVIRON = "os.environ"
# Keras Tuner's tuners: search() builds and fits one model per trial itself
# (the oracle drawing the trials, the trial files written under directory=).
KERAS_TUNERS = {f"{module}.{cls}" for module in ("keras_tuner", "kerastuner", "keras_tuner.tuners",
                                                 "kerastuner.tuners")
                for cls in ("RandomSearch", "Hyperband", "BayesianOptimization", "GridSearch", "SklearnTuner")}
# A tuner's attribute chain ending in a call that returns a Keras model the
# hypermodel builds (``tuner.hypermodel.build(best_hps)``).
KERAS_TUNER_MODEL_BUILDS = {("hypermodel", "build")}
# scikit-learn wrappers that build and fit Keras models themselves, inside
# scikit-learn's fit / cross_val_score / GridSearchCV (one model per fold).
KERAS_SKLEARN_WRAPPERS = {
    f"{module}.{cls}" for module in ("keras.wrappers.scikit_learn", "tensorflow.keras.wrappers.scikit_learn",
                                     "tensorflow.python.keras.wrappers.scikit_learn", "scikeras.wrappers")
    for cls in ("KerasClassifier", "KerasRegressor")}

# Calls allowed inside a print() that tfdist moves under a rank-0 guard: they
# cannot run a collective operation, so guarding them can never deadlock.
PURE_CALLS = {
    "len", "str", "int", "float", "round", "repr", "format", "abs", "min",
    "max", "sum", "bool", "list", "tuple", "dict", "sorted",
}
PURE_METHODS = {"numpy", "result", "format", "item", "mean", "std", "sum", "min", "max", "join", "tolist"}

# --- Step loops and samplers (rules/step_loops.py, rules/samplers.py) ---------
# Callables whose result a ``for`` step loop counts over (the real built-in or
# its Python 2 compatibility spellings).
RANGE_FUNCTIONS = {"builtins.range", "six.moves.range", "six.moves.xrange", "past.builtins.xrange",
                   "builtins.xrange", "tqdm.trange", "tqdm.auto.trange", "tqdm.notebook.trange"}
# Wrappers yielding one item per item of their first argument (a progress
# bar, a numbering): ``for i in tqdm(range(n))`` runs range(n)'s steps.
ITERATION_WRAPPERS = {"tqdm.tqdm", "tqdm.auto.tqdm", "tqdm.notebook.tqdm", "tqdm.std.tqdm", "builtins.enumerate"}
# Libraries whose functions tfdist knows (qualified-name prefixes): a call
# into another module not among them is a helper of the user's it may not see.
KNOWN_LIBRARY_PREFIXES = ("builtins.", "numpy.", "tensorflow.", "keras.", "tf_keras.", "tensorflow_datasets.",
                          "sklearn.", "pandas.", "itertools.", "tqdm.", "six.", "random.", "math.", "os.",
                          "glob.", "collections.", "functools.", "scipy.", "PIL.", "cv2.", "json.", "pickle.",
                          "csv.", "re.", "torch.", "datasets.", "transformers.")
# Stateful TensorFlow draws a step loop may pick its rows with
# (``idx = tf.random.uniform([bs], maxval=n, dtype=tf.int32)``): after
# tf.random.set_seed(s), every process draws the same sequence.
TF_GLOBAL_RANDOM = {
    "tensorflow.random.uniform", "tensorflow.random.shuffle", "tensorflow.random.categorical",
    "tensorflow.random.normal", "tensorflow.random.truncated_normal",
}
# Functions picking rows of their first argument by the indices they are
# given next (x[idx] spelled as a call).
GATHER_FUNCTIONS = {"tensorflow.gather", "tensorflow.gather_nd", "numpy.take"}
# A training step written by hand: the gradients applied to variables with
# their own update methods (``w.assign_sub(lr * g)``, ``w.assign(w - lr * g)``).
VARIABLE_UPDATE_METHODS = {"assign_sub", "assign"}
TF_VARIABLE = "tensorflow.Variable"
# Unbounded counters a step loop ends with ``if step >= N: break``.
COUNTER_FUNCTIONS = {"itertools.count"}
# Attributes and methods of arrays and tensors (not of optimizers, models or
# ops): a loop element read through them is still data (``n += X.shape[0]``).
DATA_ATTRIBUTES = {"shape", "dtype", "ndim", "size", "numpy", "astype", "reshape", "get_shape", "T"}
ENUMERATE = "builtins.enumerate"
#: Calls returning plain data (strings, numbers): no field of their result
#: is an object of the script (``args.optimizer`` is a name, not an optimizer).
PLAIN_DATA_CALLS = {"argparse.ArgumentParser.parse_args", "argparse.ArgumentParser.parse_known_args"}
#: Objects holding a run's settings, plain data like the above: a tracker's
#: config (``wandb.config.optimizer`` is a name a sweep may set).
PLAIN_DATA_OBJECTS = {"wandb.config"}
#: Calls whose result holds such settings in an attribute -> that attribute
#: (``run = wandb.init(); config = run.config``).
PLAIN_DATA_RESULT_ATTRIBUTES = {"wandb.init": "config"}
#: Keras functions making an optimizer from a configuration or a name (and
#: every class's ``from_config``).
OPTIMIZER_FROM_CONFIG = {"keras.optimizers.deserialize", "keras.optimizers.get"}
# Optimizers wrapping another, whose rate is the inner one's: the argument
# (keyword, position) holding it. ``LossScaleOptimizer(RMSprop())`` scales
# the inner optimizer's rate; tfdist follows the wrapper to its construction.
KERAS_OPTIMIZER_WRAPPERS = {
    "keras.mixed_precision.LossScaleOptimizer": ("inner_optimizer", 0),
    "keras.optimizers.LossScaleOptimizer": ("inner_optimizer", 0),
}
#: Builtins that read a container without changing its elements.
# dict(k=v, ...): a mapping whose keys are its keywords (``**dict(...)`` in a call).
DICT_CONSTRUCTORS = {"builtins.dict"}
READ_ONLY_BUILTINS = {"builtins.len", "builtins.list", "builtins.tuple", "builtins.sorted", "builtins.enumerate",
                      "builtins.zip", "builtins.print", "builtins.iter", "builtins.reversed"}
# TF1 tutorial data sets: ``read_data_sets(...)`` returns an object whose
# ``train``/``validation``/``test`` attributes draw batches with
# ``next_batch(n)``, shuffled by NumPy's global random generator (re-seeded
# from TensorFlow's graph seed when the data sets are built).
TF1_TUTORIAL_DATASETS = {
    "tensorflow.examples.tutorials.mnist.input_data.read_data_sets",
    "tensorflow.contrib.learn.python.learn.datasets.mnist.read_data_sets",
    "tensorflow.contrib.learn.datasets.mnist.read_data_sets",
    "tensorflow.contrib.learn.datasets.load_dataset",
}
TF1_TUTORIAL_SPLITS = {"train", "validation", "test"}
SAMPLER_METHODS = {"next_batch"}
# TensorFlow functions taking a shape: (keyword, position) of it. A count of
# samples there is the batch a tensor holds -- this rank's, once the data
# fed is this rank's share -- not a normaliser of the whole data set.
TF_SHAPE_ARGUMENTS = {
    "tensorflow.reshape": ("shape", 1), "tensorflow.ones": ("shape", 0), "tensorflow.zeros": ("shape", 0),
    "tensorflow.fill": ("dims", 0), "tensorflow.placeholder": ("shape", 1),
    "tensorflow.random.normal": ("shape", 0), "tensorflow.random_normal": ("shape", 0),
    "tensorflow.random.uniform": ("shape", 0), "tensorflow.random_uniform": ("shape", 0),
    "tensorflow.random.truncated_normal": ("shape", 0), "tensorflow.truncated_normal": ("shape", 0),
}
# Methods taking a batch size for the tensors they make (an RNN cell's
# initial state): (keyword, position).
TF_SHAPE_METHODS = {"zero_state": ("batch_size", 0), "get_initial_state": ("batch_size", 1)}
# Methods changing a list, dict or set in place: a list built by appends
# (rows = []; for ...: rows.append(r)) is final after its last change.
CONTAINER_MUTATORS = {"append", "extend", "insert", "pop", "remove", "clear", "sort", "reverse", "update",
                      "setdefault", "add", "discard"}
# Scalar arithmetic: a value computed by these from constants and step
# counters only (a learning-rate decay fed to a placeholder) is a
# hyper-parameter schedule, the same on every rank at the same step.
SCALAR_MATH_PREFIXES = ("math.",)
SCALAR_MATH_BUILTINS = {"builtins.min", "builtins.max", "builtins.float", "builtins.int", "builtins.abs",
                        "builtins.round", "builtins.pow"}
# Built-ins whose result is a Python number or string, never an array: a
# list of such given to fit() holds samples, not one array per input.
PYTHON_SCALAR_BUILTINS = SCALAR_MATH_BUILTINS | {"builtins.str", "builtins.bool", "builtins.len"}
# NumPy's global random generator: functions that draw from it.
NUMPY_GLOBAL_RANDOM = {
    "numpy.random.randint", "numpy.random.choice", "numpy.random.permutation", "numpy.random.shuffle",
    "numpy.random.random_integers", "numpy.random.rand", "numpy.random.randn", "numpy.random.random",
    "numpy.random.uniform", "numpy.random.normal",
}
NUMPY_RANDOM_STATE = "numpy.random.RandomState"
# NumPy random functions that draw from the data given to them (not noise).
NUMPY_DATA_DRAWS = {"numpy.random.choice", "numpy.random.permutation", "numpy.random.shuffle"}
# Functions reordering the list or array they are handed, in place (its
# rows stay the same rows).
IN_PLACE_SHUFFLES = {"numpy.random.shuffle", "random.shuffle"}
# NumPy constructors of arrays whose values are fixed by their arguments
# (``np.ones([batch_size])`` as GAN targets): fed each step, they are not data.
NUMPY_CONSTANT_ARRAYS = {"numpy.ones", "numpy.zeros", "numpy.full", "numpy.concatenate", "numpy.array",
                         "numpy.eye", "numpy.arange", "numpy.hstack", "numpy.vstack"}
# Array methods that keep the rows of an array (a fed ``x[idx].reshape(b, n)``
# still feeds rows of ``x``).
# (a SciPy sparse matrix's ``toarray()``/``todense()``: the same rows, dense)
ROW_PRESERVING_METHODS = {"reshape", "astype", "copy", "toarray", "todense"}
# Of those, the ones that keep the rows whatever their arguments (a fit()
# argument ``x.astype("float32")`` is sliced as ``x[...].astype("float32")``;
# ``reshape`` may merge rows).
ROW_KEEPING_CONVERSIONS = {"astype", "copy", "toarray", "todense", "tolist"}  # x.tolist(): a list of x's rows
# Methods of a NumPy array returning an array, whatever their arguments. Given
# straight to fit(), the result's first axis holds the samples (Keras pairs
# x[i] with y[i]), so the result is sliced as a whole, computed once:
# ``x.reshape(-1, 1)`` becomes ``x.reshape(-1, 1)[r::n]``.
ARRAY_RESULT_METHODS = {"reshape", "transpose", "swapaxes", "squeeze", "flatten", "ravel", "clip", "round"}
# Methods of an eager TensorFlow tensor returning its value as a NumPy array.
TENSOR_TO_ARRAY_METHODS = {"numpy"}
# Functions turning the array (or list) they are handed into an array with
# the same rows: np.array(x_list) is sliced as np.array(x_list[...]).
ROW_KEEPING_ARRAY_FUNCTIONS = {
    "numpy.array", "numpy.asarray", "numpy.asanyarray", "numpy.ascontiguousarray",
    "tensorflow.convert_to_tensor", "tensorflow.constant", "tensorflow.cast",
    # row i of the result is made from row i alone: labels one-hot encoded,
    # images resized, a feature axis added after the rows
    "tensorflow.one_hot", "keras.utils.to_categorical", "tensorflow.image.resize",
}
# Of those, the ones that keep the rows only when the axis they add is not
# the first: name -> (keyword of the axis, its position). Kept when the axis
# is an integer >= 1 or -1 (a new last axis).
ROW_KEEPING_WITH_AXIS = {"tensorflow.expand_dims": ("axis", 1), "numpy.expand_dims": ("axis", 1)}
# Modules whose functions draw at random: a batch helper calling one is a
# sampler (its rows differ per call), not a cut of fixed rows.
RANDOM_MODULE_PREFIXES = ("numpy.random.", "random.", "tensorflow.random.")
# Functions that, handed a one-element list of a 1-D array, make a column
# of it: ``np.transpose([y[idx]])`` holds the rows y[idx] holds, one per row.
COLUMN_OF_ROWS = {"numpy.transpose"}
ROW_KEEPING_ARRAY_FUNCTIONS |= set(ROW_KEEPING_WITH_AXIS)
# Keras' bundled data sets: ``(x_train, y_train), (x_test, y_test) =
# keras.datasets.<name>.load_data()`` unpacks NumPy arrays.
KERAS_ARRAY_DATASETS_MODULE = "keras.datasets."
KERAS_ARRAY_DATASETS_LOADER = "load_data"
# Functions returning a NumPy array whatever arrays they are handed (beyond
# the numpy module itself, whose functions all return arrays but for the
# generator constructors).
# Functions returning a tuple of NumPy arrays (the samples, their labels):
# ``X, y = make_moons(1000)``, ``data = make_moons(1000)[0]``.
ARRAY_TUPLE_FUNCTIONS = {
    "sklearn.datasets." + n for n in (
        "make_moons", "make_circles", "make_blobs", "make_classification", "make_regression", "make_s_curve",
        "make_swiss_roll", "make_multilabel_classification", "make_friedman1", "make_friedman2", "make_friedman3",
        "make_gaussian_quantiles", "make_hastie_10_2")
}
ARRAY_RETURNING_FUNCTIONS = {"keras.utils.to_categorical", "keras.utils.normalize", "keras.utils.pad_sequences",
                             "keras.preprocessing.sequence.pad_sequences"}
# TensorFlow ops giving a tensor of their first argument's rows, one per row
# (``tf.one_hot(labels, 10)``, ``tf.cast(x, tf.float32)``): read by rows
# like the array, and sliced like it. one_hot keeps rows only with its
# default axis (-1).
TENSOR_ROW_FUNCTIONS = {"tensorflow.one_hot", "tensorflow.cast", "tensorflow.convert_to_tensor"}
# scikit-learn transformers whose transform methods give one row per input
# row (``x_train = StandardScaler().fit_transform(X)``, ``scaler.transform(X)``):
# an array fit() and step loops read by rows like the input. Encoders that
# give sparse matrices by default (OneHotEncoder, KBinsDiscretizer) are not here.
SKLEARN_ROW_TRANSFORMERS = {f"sklearn.preprocessing.{n}" for n in (
    "StandardScaler", "MinMaxScaler", "MaxAbsScaler", "RobustScaler", "Normalizer", "QuantileTransformer",
    "PowerTransformer", "PolynomialFeatures", "LabelBinarizer", "LabelEncoder")} | {
    "sklearn.decomposition.PCA", "sklearn.decomposition.TruncatedSVD"}
SKLEARN_ROW_TRANSFORM_METHODS = {"transform", "fit_transform", "inverse_transform"}
# ...and scikit-learn's functions doing the same to an array (``minmax_scale(y)``).
SKLEARN_ROW_TRANSFORM_FUNCTIONS = {f"sklearn.preprocessing.{n}" for n in (
    "scale", "minmax_scale", "maxabs_scale", "robust_scale", "normalize", "quantile_transform", "power_transform")}
# Functions making a new array from a shape or a literal (np.ones((64, 8)),
# np.random.random((64, 8)), tf.constant([[...]])): a fit() argument made by
# one is sliced by rank where it is made, evaluated once.
ARRAY_CONSTRUCTORS = {
    "numpy.array", "numpy.asarray", "numpy.ones", "numpy.zeros", "numpy.full", "numpy.empty",
    "numpy.arange", "numpy.linspace", "numpy.eye",
    "numpy.random.random", "numpy.random.rand", "numpy.random.randn", "numpy.random.randint",
    "numpy.random.uniform", "numpy.random.normal", "numpy.random.random_sample",
    "tensorflow.constant", "tensorflow.ones", "tensorflow.zeros", "tensorflow.fill",
    "tensorflow.random.uniform", "tensorflow.random.normal",
}
# Built-ins of Python 2 that a script may use without importing them.
PYTHON2_RANGE = "xrange"

# --- Files a training run writes: rank 0 only (rules/rank0_io.py) ----------------
# Module functions that write a file (or, for pyplot.show, block on a window)
# -> how the change message calls them. None of them runs a collective
# operation, so a statement made only of them and of collective-free
# calls can run on rank 0 alone.
FILE_WRITE_FUNCTIONS = {
    "numpy.save": "NumPy save",
    "numpy.savez": "NumPy savez",
    "numpy.savez_compressed": "NumPy savez_compressed",
    "numpy.savetxt": "NumPy savetxt",
    "pickle.dump": "pickle dump",
    "json.dump": "JSON dump",
    "matplotlib.pyplot.savefig": "matplotlib savefig",
    "matplotlib.pyplot.imsave": "matplotlib imsave",
    "matplotlib.pyplot.show": "matplotlib show (a window)",
    "tensorflow.io.write_file": "tf.io.write_file",
    "tensorflow.write_file": "tf.write_file",
    "keras.utils.save_img": "Keras save_img",
    "keras.preprocessing.image.save_img": "Keras save_img",
    "keras.utils.plot_model": "Keras plot_model",
    "cv2.imwrite": "OpenCV imwrite",
    "scipy.misc.imsave": "scipy.misc.imsave",
    "imageio.imwrite": "imageio imwrite",
    "imageio.imsave": "imageio imsave",
    "imageio.mimsave": "imageio mimsave",
    "imageio.mimwrite": "imageio mimwrite",
    "imageio.v2.imwrite": "imageio imwrite",
    "imageio.v3.imwrite": "imageio imwrite",
}
# Calls that only log a step's number (a summary's step=, a log line): a
# loop renumbering its steps per rank changes what they show, not training.
STEP_NUMBER_LOGGERS = ("tensorflow.summary.", "logging.", "builtins.str", "builtins.int", "builtins.float")
# The names an optimizer's constructor takes its learning rate by.
LEARNING_RATE_KEYWORDS = ("learning_rate", "lr")
# Where each of those takes the file it writes: (keyword, position).
FILE_WRITE_TARGETS = {
    "numpy.save": ("file", 0), "numpy.savez": ("file", 0), "numpy.savez_compressed": ("file", 0),
    "numpy.savetxt": ("fname", 0), "pickle.dump": ("file", 1), "json.dump": ("fp", 1),
    "matplotlib.pyplot.savefig": ("fname", 0), "matplotlib.pyplot.imsave": ("fname", 0),
    "tensorflow.io.write_file": ("filename", 0), "tensorflow.write_file": ("filename", 0),
    "keras.utils.save_img": ("path", 0), "keras.preprocessing.image.save_img": ("path", 0),
    "cv2.imwrite": ("filename", 0), "scipy.misc.imsave": ("name", 0), "imageio.imwrite": ("uri", 0),
    "imageio.imsave": ("uri", 0), "imageio.mimsave": ("uri", 0), "imageio.mimwrite": ("uri", 0),
    "imageio.v2.imwrite": ("uri", 0), "imageio.v3.imwrite": ("uri", 0),
}
# Files held in memory: a write into one (``plt.savefig(buf)`` to log a
# plot as a summary image) writes no file, and every rank reads it back.
IN_MEMORY_FILES = {"io.BytesIO", "io.StringIO"}
# Of those, the ones whose first argument is the path written: a script may
# read that file again (np.savetxt(path, x), then a reader of path).
FILE_WRITE_PATH_FIRST = {n for n in FILE_WRITE_FUNCTIONS if not n.startswith(("pickle.", "json."))
                         and n != "matplotlib.pyplot.show" and n != "keras.utils.plot_model"}
# Calls that name a file without reading it into the run: handing it to the
# user (a notebook download, an embedded animation or image) or labelling
# code with it. A file written on rank 0 and then only named so is no race.
FILE_PRESENTERS = {
    "google.colab.files.download", "tensorflow_docs.vis.embed.embed_file", "IPython.display.Image",
    "IPython.display.Video", "IPython.display.Audio", "IPython.display.FileLink", "IPython.display.display",
    "builtins.compile",
}
# Functions that open a file -> (positional index of the mode, its keyword,
# the mode when none is given; None: the mode is required). A mode with
# w, a, x or + writes.
FILE_OPEN_FUNCTIONS = {
    "builtins.open": (1, "mode", "r"),
    "io.open": (1, "mode", "r"),
    "tensorflow.io.gfile.GFile": (1, "mode", "r"),
    "tensorflow.gfile.GFile": (1, "mode", "r"),
    "tensorflow.gfile.Open": (1, "mode", "r"),
}
FILE_WRITE_MODE_LETTERS = frozenset("wax+")
# Objects whose methods write files, known by what built them.
PIL_IMAGE = "PIL image"
MPL_FIGURE = "matplotlib figure"
DATAFRAME = "pandas DataFrame"
CSV_WRITER = "csv writer"
OPEN_FILE = "file opened for writing"
# constructor or factory -> kind of the object it returns
WRITER_OBJECT_CONSTRUCTORS = {
    "PIL.Image.fromarray": PIL_IMAGE,
    "PIL.Image.open": PIL_IMAGE,
    "PIL.Image.new": PIL_IMAGE,
    "scipy.misc.toimage": PIL_IMAGE,
    "keras.utils.array_to_img": PIL_IMAGE,
    "keras.preprocessing.image.array_to_img": PIL_IMAGE,
    "matplotlib.pyplot.figure": MPL_FIGURE,
    "matplotlib.figure.Figure": MPL_FIGURE,
    "pandas.DataFrame": DATAFRAME,
    "pandas.DataFrame.from_dict": DATAFRAME,
    "pandas.DataFrame.from_records": DATAFRAME,
    "pandas.read_csv": DATAFRAME,
    "csv.writer": CSV_WRITER,
    "csv.DictWriter": CSV_WRITER,
}
# Factories returning a tuple: name -> {position in the tuple: kind}.
WRITER_OBJECT_TUPLES = {
    "matplotlib.pyplot.subplots": {0: MPL_FIGURE},
}
# Methods returning another object of the same kind (img.convert("L").save(p)).
WRITER_OBJECT_CHAINS = {
    PIL_IMAGE: {"convert", "resize", "crop", "rotate", "transpose", "copy", "quantize"},
    DATAFRAME: {"round", "copy", "rename", "reset_index", "set_index", "sort_values", "transpose",
                "sample", "reindex", "drop", "dropna", "fillna", "head", "tail", "astype", "query", "assign"},
}
# pandas DataFrame methods drawing rows at random -> the keyword seeding them
# (``df.sample(frac=1)``: without it each process draws its own order).
DATAFRAME_RANDOM_DRAWS = {"sample": "random_state"}
# Writing methods that write only when handed a path, and otherwise return
# what they would write (``df.to_json(orient="records")`` is a string):
# kind -> method -> (keyword, position) of the path.
WRITER_METHODS_PATH_OPTIONAL = {
    DATAFRAME: {"to_csv": ("path_or_buf", 0), "to_json": ("path_or_buf", 0), "to_parquet": ("path", 0)},
}
# Methods of a file object that only write to it (or close it): a file
# opened on rank 0 only can have each such statement guarded on its own.
FILE_OBJECT_WRITE_METHODS = {"write", "writelines", "flush", "close"}
# kind -> method that writes a file -> how the change message calls it.
# (Rows of a csv writer and writes to an open file are guarded with the
# ``with open(...)`` statement that opened the file.)
WRITER_OBJECT_METHODS = {
    PIL_IMAGE: {"save": "PIL image save"},
    MPL_FIGURE: {"savefig": "matplotlib figure savefig"},
    DATAFRAME: {
        "to_csv": "DataFrame.to_csv",
        "to_json": "DataFrame.to_json",
        "to_pickle": "DataFrame.to_pickle",
        "to_parquet": "DataFrame.to_parquet",
        "to_excel": "DataFrame.to_excel",
        "to_hdf": "DataFrame.to_hdf",
    },
}
# Libraries none of whose functions runs a collective operation: calls into
# them may sit in code that runs on rank 0 only (plotting, images, tables,
# serialisation). Module prefixes of canonical names.
COLLECTIVE_FREE_MODULES = (
    "numpy.", "matplotlib.", "PIL.", "cv2.", "imageio.", "scipy.misc.", "pandas.",
    "json.", "pickle.", "csv.", "os.path.", "time.", "sys.stdout.", "sys.stderr.",
    "gzip.", "bz2.", "lzma.", "zipfile.", "tarfile.", "shutil.",
    # a progress bar: wrapping an iterable runs nothing (what it iterates is checked on its own)
    "tqdm.",
)
# Built-ins that run no collective operation, allowed in code moved to rank 0.
COLLECTIVE_FREE_BUILTINS = {
    "builtins.open", "builtins.print", "builtins.range", "builtins.enumerate", "builtins.zip",
    "builtins.len", "builtins.str", "builtins.int", "builtins.float", "builtins.round", "builtins.repr",
    "builtins.format", "builtins.abs", "builtins.min", "builtins.max", "builtins.sum", "builtins.bool",
    "builtins.list", "builtins.tuple", "builtins.dict", "builtins.sorted", "builtins.reversed",
    "builtins.vars", "builtins.set", "builtins.frozenset", "builtins.isinstance", "builtins.hasattr",
    "builtins.type", "builtins.any", "builtins.all", "builtins.chr", "builtins.ord", "builtins.hex",
    "builtins.bin", "builtins.oct", "builtins.divmod", "builtins.pow", "builtins.bytes", "builtins.callable",
    # a dataset's elements as NumPy values: reading it runs no collective
    "tensorflow_datasets.as_numpy", "tensorflow_datasets.as_dataframe",
}
# Methods of arrays, tensors, dicts and strings that run no collective
# operation and change nothing, whatever the receiver: like PURE_METHODS,
# for the values a rank-0-only write saves.
COLLECTIVE_FREE_METHODS = {
    "astype", "reshape", "squeeze", "clip", "transpose", "flatten", "ravel", "copy",
    "argmax", "argmin", "any", "all",
    "items", "keys", "values", "get",
    "split", "strip", "replace", "upper", "lower", "startswith", "endswith",
    "zfill", "rjust", "ljust", "center", "rstrip", "lstrip", "title",
}
# Methods that read a text encoder's or a layer's own state -- a tfds
# encoder's decode/encode, a Keras Tokenizer's texts_to_sequences, a
# TextVectorization/StringLookup vocabulary, a layer's get_weights() or its
# configuration (get_config(), pickled beside a saved model) -- and
# run no collective operation (an embedding projector's vecs.tsv/meta.tsv
# export calls them while writing). Not for an instance of a class of the
# user's code, whose method of that name may do anything.
STATE_READING_METHODS = {
    "get_vocabulary", "vocabulary_size", "decode", "encode", "texts_to_sequences", "sequences_to_texts",
    "get_weights", "get_config",
}

# Console writes: rank 0 only (a stream's flush writes nothing of its own).
CONSOLE_WRITE_FUNCTIONS = {"builtins.print", "sys.stdout.write", "tqdm.tqdm.write", "tqdm.auto.tqdm.write",
                           "tqdm.notebook.tqdm.write"}

# --- Experiment trackers and progress bars: one process reports (rules/trackers.py)
# A tracker's call starting a run -> (keyword, the value starting a run that
# logs nothing, the keyword's value when absent). Measured on wandb 0.31.0:
# wandb.init(mode="disabled") returns a run whose config is read and set as
# usual and whose log, summary and Keras callbacks do nothing.
TRACKER_QUIET_RUNS = {"wandb.init": ("mode", '"disabled"', "None")}
# Tracker functions that log, or start, end or choose the run logged to, and
# have no quiet mode: rank 0 only.
_MLFLOW_LOGGING = ("log_metric", "log_metrics", "log_param", "log_params", "log_artifact", "log_artifacts",
                   "log_dict", "log_figure", "log_image", "log_text", "log_table", "log_input", "set_tag",
                   "set_tags", "set_experiment", "create_experiment", "start_run", "end_run", "autolog")
TRACKER_RANK0_FUNCTIONS = ({f"mlflow.{f}" for f in _MLFLOW_LOGGING}
                           | {f"mlflow.{flavor}.{f}" for flavor in ("tensorflow", "keras")
                              for f in ("autolog", "log_model", "save_model")})
# Of those, the calls opening a run that a with-statement may hold (the
# training inside it runs on every process: the run is a null context there).
TRACKER_RUN_CONTEXTS = {"mlflow.start_run"}
# Sweep agents: a server hands each agent the settings of its next run.
TRACKER_SWEEP_AGENTS = {"wandb.agent"}
# Progress bars -> the keyword turning one off.
PROGRESS_BARS = {name: "disable" for name in (
    "tqdm.tqdm", "tqdm.auto.tqdm", "tqdm.notebook.tqdm", "tqdm.std.tqdm", "tqdm.tqdm_notebook",
    "tqdm.trange", "tqdm.auto.trange", "tqdm.notebook.trange", "tqdm.tnrange")}

# --- Data sources beyond tf.data constructors -----------------------------------
# tensorflow_datasets.load: a dataset of known size per split, or -- with
# with_info=True, a list of splits, or split=None -- a tuple / list / dict of them.
# A builder's as_dataset(split=None, *, batch_size=None, shuffle_files=False,
# read_config=None, ...) returns the same as load(): builder = tfds.builder(name).
TFDS_AS_DATASET = "tensorflow_datasets.core.DatasetBuilder.as_dataset"
TFDS_LOAD = {"tensorflow_datasets.load", TFDS_AS_DATASET}
TFDS_READ_CONFIG = "tensorflow_datasets.ReadConfig"
# load(name, *, split=..., shuffle_files=..., ...): keyword-only in tfds 4;
# as_dataset(split, ...): split also first positionally.
TFDS_LOAD_POS = {"split": None, "shuffle_files": None}
TFDS_SPLIT_POSITION = {"tensorflow_datasets.load": None, TFDS_AS_DATASET: 0}
# tfds split objects whose method returns a list of splits (the older
# sub-split API: ``tfds.Split.TRAIN.subsplit(weighted=(8, 1, 1))``).
TFDS_SPLIT_LIST_METHODS = {"subsplit"}
# Factories whose result's methods are named by its class: x = factory(...);
# x.method(...) is "<class>.method" (only for the methods listed).
FACTORY_INSTANCES = {"tensorflow_datasets.builder": "tensorflow_datasets.core.DatasetBuilder",
                     "argparse.ArgumentParser": "argparse.ArgumentParser"}
FACTORY_INSTANCE_METHODS = {"as_dataset", "parse_args", "parse_known_args"}
# Keras directory readers: a BATCHED dataset of known size (shuffled with
# ``seed``, a random one when absent); subset="both" returns (train, val).
KERAS_DIRECTORY_DATASETS = {
    "keras.utils.image_dataset_from_directory",
    "keras.utils.text_dataset_from_directory",
    "keras.utils.audio_dataset_from_directory",
    "keras.preprocessing.image_dataset_from_directory",
    "keras.preprocessing.text_dataset_from_directory",
}
# Attributes the directory readers set on the dataset object they return
# (lost on any dataset made from it: ds.apply(...).class_names fails).
KERAS_DIRECTORY_DATASET_ATTRIBUTES = {"class_names", "file_paths"}
# Keras array readers: a BATCHED dataset of known size made from arrays in
# memory (windows of a series), shuffled with ``seed`` when shuffle=True.
KERAS_ARRAY_DATASETS = {
    "keras.utils.timeseries_dataset_from_array",
    "keras.preprocessing.timeseries_dataset_from_array",
}
#: Keras readers that batch what they yield; both kinds have a known size.
KERAS_BATCHED_DATASETS = KERAS_DIRECTORY_DATASETS | KERAS_ARRAY_DATASETS
DATASET_SOURCES.update(TFDS_LOAD | KERAS_BATCHED_DATASETS)
# Sources that batch their elements themselves:
# name -> (keyword of the batch size, its position, its default).
BATCHING_SOURCES = {
    "keras.utils.image_dataset_from_directory": ("batch_size", 5, 32),
    "keras.preprocessing.image_dataset_from_directory": ("batch_size", 5, 32),
    "keras.utils.text_dataset_from_directory": ("batch_size", 4, 32),
    "keras.preprocessing.text_dataset_from_directory": ("batch_size", 4, 32),
    "keras.utils.audio_dataset_from_directory": ("batch_size", 4, 32),
    "keras.utils.timeseries_dataset_from_array": ("batch_size", 5, 128),
    "keras.preprocessing.timeseries_dataset_from_array": ("batch_size", 5, 128),
    # make_csv_dataset(file_pattern, batch_size, ...): required, no default
    "tensorflow.data.experimental.make_csv_dataset": ("batch_size", 1, None),
}
# tfds.load(..., batch_size=n): batched when given (keyword-only), unbatched by default.
BATCHING_SOURCES.update({n: ("batch_size", None, None) for n in TFDS_LOAD})
# Sources shuffled with a seed argument that defaults to a random seed per
# process: the ranks must share one, or their shards overlap.
# name -> (keyword of the shuffle switch, its positional index or None,
#          keyword of the seed, its positional index or None (keyword only
#          in practice: a call passing more than three arguments by position
#          is left alone), whether it shuffles when the switch is not given)
SEEDED_SHUFFLE_SOURCES = {n: ("shuffle", None, "seed", None, True) for n in KERAS_DIRECTORY_DATASETS}
SEEDED_SHUFFLE_SOURCES.update({n: ("shuffle", None, "seed", None, False) for n in KERAS_ARRAY_DATASETS})
SEEDED_SHUFFLE_SOURCES["tensorflow.data.Dataset.list_files"] = ("shuffle", 1, "seed", 2, True)
# make_csv_dataset shuffles its files and records (shuffle=True by default) with shuffle_seed
SEEDED_SHUFFLE_SOURCES["tensorflow.data.experimental.make_csv_dataset"] = ("shuffle", None, "shuffle_seed", None, True)
# keras.utils.split_dataset(dataset, left_size, right_size, shuffle=False, seed=None)
# -> (left, right): two datasets of its data, in memory (their size known)
KERAS_DATASET_SPLITTERS = {"keras.utils.split_dataset"}
SEEDED_SHUFFLE_SOURCES.update({n: ("shuffle", 3, "seed", 4, False) for n in KERAS_DATASET_SPLITTERS})
# Dataset methods turning a dataset of file names into one of records: a
# list_files pipeline is sharded by record right after them.
RECORD_READING_METHODS = {"interleave", "flat_map"}
# Dataset methods after which TensorFlow still knows the number of elements.
SIZE_KEEPING_DATASET_METHODS = {
    "batch", "padded_batch", "shuffle", "repeat", "map", "prefetch", "cache",
    "take", "skip", "with_options", "enumerate", "shard", "map_with_legacy_function",
}
# Keras ImageDataGenerator: flow(x, y) reads arrays (sliced by rank),
# flow_from_directory / flow_from_dataframe read files (one shuffled stream per rank).
KERAS_IMAGE_DATA_GENERATORS = {"keras.preprocessing.image.ImageDataGenerator"}
IMAGE_GENERATOR_ARRAY_FLOWS = {"flow": {"x": 0, "y": 1, "sample_weight": 4}}
IMAGE_GENERATOR_FILE_FLOWS = {"flow_from_directory", "flow_from_dataframe"}
KERAS_SEQUENCE = "keras.utils.Sequence"
# Base classes of Keras Sequences: fit() reads their batches by index (Keras 3 names it PyDataset).
KERAS_SEQUENCE_BASES = {KERAS_SEQUENCE, "keras.utils.PyDataset"}
# Sequences Keras itself provides (Keras 2's keras.preprocessing; Keras 3
# dropped them for tf.data): fit() reads them by index like a subclass.
KERAS_SEQUENCE_CLASSES = {"keras.preprocessing.sequence.TimeseriesGenerator"}
# NumPy calls that draw from its global generator (which the tf.distribute engine seeds alike on
# every worker around a Sequence's on_epoch_end), and constructors of generators of their own.
NUMPY_OWN_GENERATORS = {"numpy.random.default_rng", "numpy.random.RandomState", "numpy.random.Generator"}
RANDOM_DRAWS = {"shuffle", "permutation", "choice", "randint", "random", "rand", "randn", "sample", "integers", "uniform", "normal"}
# Functions that count a dataset's or a Sequence's elements.
COUNT_FUNCTIONS = {"len", "tensorflow.data.experimental.cardinality"}
COUNT_METHODS = {"cardinality", "__len__"}

# --- Already distributed: every spelling of TensorFlow's own distribution APIs ----
# Canonical module names (a use of anything under them, an import of them or
# from them): tf.distribute (also compat.v1 and TF1's contrib), DTensor, and
# Keras' DTensor / Keras 3 distribution APIs. A file using them is left unchanged.
DISTRIBUTED_TF_MODULES = (
    "tensorflow.distribute",
    "tensorflow.contrib.distribute",
    "tensorflow.python.distribute",
    "tensorflow.experimental.dtensor",
    "tensorflow.dtensor",
    "keras.dtensor",
    "keras.distribution",
)
# Keras 2's in-process multi-GPU replication (one process, several GPUs).
DISTRIBUTED_TF_FUNCTIONS = {"keras.utils.multi_gpu_model", "keras.utils.training_utils.multi_gpu_model"}

# --- TF1 eager (tf.contrib.eager) gradient functions: not converted -------------
# They return a function computing (gradient, variable) pairs of every
# trainable variable a loss touches; Horovod has no wrapper for them.
TF1_EAGER_IMPLICIT_GRADIENTS = {
    "tensorflow.contrib.eager.implicit_gradients",
    "tensorflow.contrib.eager.implicit_value_and_gradients",
    "tensorflow.contrib.eager.python.backprop.implicit_grad",
    "tensorflow.contrib.eager.python.backprop.implicit_val_and_grad",
}

# Keras 2's lowercase optimizer aliases (``keras.optimizers.rmsprop(lr=...)``):
# the same classes as their capitalised names.
ALIAS_EXACT.update({
    "keras.optimizers.sgd": "keras.optimizers.SGD",
    "keras.optimizers.rmsprop": "keras.optimizers.RMSprop",
    "keras.optimizers.adagrad": "keras.optimizers.Adagrad",
    "keras.optimizers.adadelta": "keras.optimizers.Adadelta",
    "keras.optimizers.adam": "keras.optimizers.Adam",
    "keras.optimizers.adamax": "keras.optimizers.Adamax",
    "keras.optimizers.nadam": "keras.optimizers.Nadam",
})

# Dataset methods called on the class with their datasets as arguments
# (tf.data.Dataset.concatenate(pos, neg)) -> how many leading positional
# arguments are datasets.
DATASET_CLASS_CALLS = {"tensorflow.data.Dataset.concatenate": 2}
# Dataset constructors combining a list of datasets -> positional index of the list.
DATASET_COMBINERS = {
    "tensorflow.data.Dataset.sample_from_datasets": 0,
    "tensorflow.data.experimental.sample_from_datasets": 0,
    "tensorflow.data.Dataset.choose_from_datasets": 0,
    "tensorflow.data.experimental.choose_from_datasets": 0,
}
# Combiners that draw which dataset gives the next element at random, with a
# per-process seed unless given one -> (keyword, position) of the seed.
SEEDED_DATASET_COMBINERS = {
    "tensorflow.data.Dataset.sample_from_datasets": ("seed", 2),
    "tensorflow.data.experimental.sample_from_datasets": ("seed", 2),
}
# Functions splitting or shuffling arrays at random -> (keyword, position)
# of their seed: left out, every process draws its own split, so the
# ranks' shares of "the training data" would overlap, and hold test rows.
RANDOM_ARRAY_SPLITTERS = {
    "sklearn.model_selection.train_test_split": ("random_state", None),
    "sklearn.utils.shuffle": ("random_state", None),
}
# Functions returning the arrays they are handed, in the order handed, each
# reordered by one shared permutation (``X, Y = shuffle(X, Y)``): pairs are
# kept, and an array rebound to its own reordering holds the same rows.
JOINT_ROW_SHUFFLES = {"sklearn.utils.shuffle"}
# NumPy global draws that reorder or pick rows of data (not ones making
# values): unseeded before the arrays are sliced by rank, each process
# would reorder its own way.
NUMPY_REORDERING_DRAWS = {"numpy.random.permutation", "numpy.random.shuffle", "numpy.random.choice"}
# Python's random module: draws reordering a list from its global generator,
# and the calls seeding that generator.
PYTHON_REORDERING_DRAWS = {"random.shuffle", "random.sample", "random.choice", "random.choices"}
PYTHON_GLOBAL_RANDOM = PYTHON_REORDERING_DRAWS | {
    "random.random", "random.randint", "random.randrange", "random.uniform", "random.gauss"}
PYTHON_GLOBAL_SEED_SETTERS = {"random.seed", "tensorflow.keras.utils.set_random_seed", "keras.utils.set_random_seed"}
# Calls seeding NumPy's global generator (which those fall back on).
NUMPY_GLOBAL_SEED_SETTERS = {"numpy.random.seed", "tensorflow.keras.utils.set_random_seed",
                             "keras.utils.set_random_seed"}
# Dataset methods that draw random numbers per process: a shard taken after
# one of them is not disjoint from the other ranks' shards.
RANDOM_DATASET_METHODS = {"shuffle"}
# Functions setting TensorFlow's global seed: with it set, every op without a
# seed of its own (a Dataset.shuffle) draws the same numbers on every rank.
TF_GLOBAL_SEED_SETTERS = {
    "tensorflow.random.set_seed", "tensorflow.keras.utils.set_random_seed", "keras.utils.set_random_seed",
    "tensorflow.compat.v1.set_random_seed", "tensorflow.set_random_seed",
}
# TF1 queue readers that batch at random (a shuffling queue): without a seed
# of their own or a graph seed, every process draws its own stream.
TF1_SHUFFLING_QUEUES = {f"{prefix}.train.{fn}" for prefix in ("tensorflow", "tensorflow.compat.v1")
                        for fn in ("shuffle_batch", "shuffle_batch_join", "maybe_shuffle_batch",
                                   "maybe_shuffle_batch_join")}
# TF1 producers that shuffle the elements they are handed (samples, or
# their indices) unless called with shuffle=False: unseeded, each process
# draws its own order. (string_input_producer is not one: it shuffles file
# names, and ranks reading one file would still read the same records.)
TF1_SHUFFLING_PRODUCERS = {f"{prefix}.train.{fn}" for prefix in ("tensorflow", "tensorflow.compat.v1")
                           for fn in ("slice_input_producer", "range_input_producer")}
# TF1 queue pipelines of any kind (producers and batchers): a train op run
# without a feed may read its batches from one.
TF1_QUEUE_READERS = TF1_SHUFFLING_QUEUES | {
    f"{prefix}.train.{fn}" for prefix in ("tensorflow", "tensorflow.compat.v1")
    for fn in ("batch", "batch_join", "maybe_batch", "string_input_producer", "slice_input_producer",
               "input_producer", "range_input_producer")}
# Dataset methods that group elements into batches, and that split batches
# back into elements (``ds.batch(10000).map(pack_row).unbatch()``).
BATCHING_DATASET_METHODS = {"batch", "padded_batch", "ragged_batch", "rebatch"}
# Transformations handed to ``dataset.apply(...)`` that batch the dataset ->
# (keyword, position) of their batch size.
BATCHING_TRANSFORMATIONS = {
    "tensorflow.data.experimental.map_and_batch": ("batch_size", 1),
    "tensorflow.data.experimental.dense_to_ragged_batch": ("batch_size", 0),
    "tensorflow.data.experimental.dense_to_sparse_batch": ("batch_size", 0),
}
UNBATCHING_DATASET_METHODS = {"unbatch"}
# Dataset methods whose output depends on where each element stands in the
# stream or on its neighbours: windows of a series, a split by count
# (take/skip), numbering, running state, grouping. A shard taken before one
# of them changes what it makes (windows over every size-th step of the
# series, a train/validation split that leaks), so the data is sharded after
# the last of them (before the batching).
POSITIONAL_DATASET_METHODS = {
    "window", "take", "skip", "enumerate", "scan", "group_by_window",
    "bucket_by_sequence_length", "rejection_resample", "unique",
}
# Dataset methods that group consecutive elements into one: a dataset
# batched twice made its samples of neighbouring rows at the first
# (``from_tensor_slices(chars).batch(seq_len + 1)`` -> sequences).
ROW_GROUPING_DATASET_METHODS = {"batch", "padded_batch", "ragged_batch"}
# Dataset methods whose elements are datasets themselves (a window is a
# dataset of its steps) until a flat_map/interleave turns them back into
# tensors: the shard goes after that.
NESTING_DATASET_METHODS = {"window"}


# Keras Loss classes (modules their qualified names start with) and the
# reductions that make a Loss object return a mean: Keras 3 divides such a
# mean by the number of replicas when a strategy runs it.
KERAS_LOSS_MODULES = ("tensorflow.keras.losses.", "keras.losses.", "tf_keras.losses.")
# Where Keras layer classes live (layers.Normalization(), layers.experimental.preprocessing.Rescaling())
KERAS_LAYER_MODULES = ("keras.layers.",)
KERAS_MEAN_REDUCTIONS = {"auto", "sum_over_batch_size", "mean", "mean_with_sample_weight"}
