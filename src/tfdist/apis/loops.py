"""TF2 custom loops and step loops written by hand (rules/step_loops.py,
rules/samplers.py): tapes, checkpoints, range-like loops, shapes of a batch."""
from __future__ import annotations

GRADIENT_TAPE = "tensorflow.GradientTape"
TF_FUNCTION = "tensorflow.function"
TF_VARIABLE = "tensorflow.Variable"
# Calls that make a trainable variable: TensorFlow's, and Keras 3's (a tf.Variable inside on the
# TensorFlow backend, mirrored when made in a strategy's scope).
VARIABLE_CONSTRUCTORS = {TF_VARIABLE, "keras.Variable", "keras.src.backend.Variable", "tensorflow.keras.Variable"}
TF2_FILE_WRITER = "tensorflow.summary.create_file_writer"
TF2_CHECKPOINT = "tensorflow.train.Checkpoint"
TF2_CHECKPOINT_MANAGER = "tensorflow.train.CheckpointManager"
# Methods of these objects that write files.
CHECKPOINT_SAVE_METHODS = {"save", "write"}
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
# Functions picking rows of their first argument by the indices they are
# given next (x[idx] spelled as a call).
GATHER_FUNCTIONS = {"tensorflow.gather", "tensorflow.gather_nd", "numpy.take"}
# A training step written by hand: the gradients applied to variables with
# their own update methods (``w.assign_sub(lr * g)``, ``w.assign(w - lr * g)``).
VARIABLE_UPDATE_METHODS = {"assign_sub", "assign"}
# Unbounded counters a step loop ends with ``if step >= N: break``.
COUNTER_FUNCTIONS = {"itertools.count"}
# Attributes and methods of arrays and tensors (not of optimizers, models or
# ops): a loop element read through them is still data (``n += X.shape[0]``).
DATA_ATTRIBUTES = {"shape", "dtype", "ndim", "size", "numpy", "astype", "reshape", "get_shape", "T"}
ENUMERATE = "builtins.enumerate"
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
# Built-ins of Python 2 that a script may use without importing them.
PYTHON2_RANGE = "xrange"
# Calls that only log a step's number (a summary's step=, a log line): a
# loop renumbering its steps per rank changes what they show, not training.
STEP_NUMBER_LOGGERS = ("tensorflow.summary.", "logging.", "builtins.str", "builtins.int", "builtins.float")
