"""Random draws and the calls seeding them (TensorFlow, NumPy, Python's random,
scikit-learn): unseeded, each process draws its own."""
from __future__ import annotations

# Stateful TensorFlow draws a step loop may pick its rows with
# (``idx = tf.random.uniform([bs], maxval=n, dtype=tf.int32)``): after
# tf.random.set_seed(s), every process draws the same sequence.
TF_GLOBAL_RANDOM = {
    "tensorflow.random.uniform", "tensorflow.random.shuffle", "tensorflow.random.categorical",
    "tensorflow.random.normal", "tensorflow.random.truncated_normal",
}
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
# Modules whose functions draw at random: a batch helper calling one is a
# sampler (its rows differ per call), not a cut of fixed rows.
RANDOM_MODULE_PREFIXES = ("numpy.random.", "random.", "tensorflow.random.")
# NumPy calls that draw from its global generator (which the tf.distribute engine seeds alike on
# every worker around a Sequence's on_epoch_end), and constructors of generators of their own.
NUMPY_OWN_GENERATORS = {"numpy.random.default_rng", "numpy.random.RandomState", "numpy.random.Generator"}
RANDOM_DRAWS = {"shuffle", "permutation", "choice", "randint", "random", "rand", "randn", "sample", "integers", "uniform", "normal"}
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
# NumPy global draws of numbers a comparison turns into a random row mask
# (``np.random.rand(n) <= 0.85`` picking a training split): a split as well.
NUMPY_MASK_DRAWS = {"numpy.random.rand", "numpy.random.random", "numpy.random.random_sample", "numpy.random.uniform"}
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
# Keras 3 draws (keras.random) -> the position of their ``seed`` argument.
# Without one they draw from Keras's global SeedGenerator, created on first
# use and kept per thread: inside a strategy's replicated step that creation
# fails (facts/layer_draws.py).
KERAS3_RANDOM_DRAWS = {
    "keras.random.uniform": 4, "keras.random.normal": 4, "keras.random.truncated_normal": 4,
    "keras.random.randint": 4, "keras.random.binomial": 4, "keras.random.beta": 4,
    "keras.random.categorical": 3, "keras.random.dropout": 3, "keras.random.gamma": 3,
    "keras.random.shuffle": 2,
}
KERAS3_SEED_GENERATOR = "SeedGenerator"
