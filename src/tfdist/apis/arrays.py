"""Arrays that hold rows of data: what keeps, makes or returns them (NumPy,
TensorFlow, scikit-learn, Keras' bundled data sets)."""
from __future__ import annotations

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
# Functions that, handed a one-element list of a 1-D array, make a column
# of it: ``np.transpose([y[idx]])`` holds the rows y[idx] holds, one per row.
COLUMN_OF_ROWS = {"numpy.transpose"}
ROW_KEEPING_ARRAY_FUNCTIONS |= set(ROW_KEEPING_WITH_AXIS)
# Keras' bundled data sets: ``(x_train, y_train), (x_test, y_test) =
# keras.datasets.<name>.load_data()`` unpacks NumPy arrays.
KERAS_ARRAY_DATASETS_MODULE = "keras.datasets."
KERAS_ARRAY_DATASETS_LOADER = "load_data"
# Functions returning a tuple of NumPy arrays (the samples, their labels):
# ``X, y = make_moons(1000)``, ``data = make_moons(1000)[0]``.
ARRAY_TUPLE_FUNCTIONS = {
    "sklearn.datasets." + n for n in (
        "make_moons", "make_circles", "make_blobs", "make_classification", "make_regression", "make_s_curve",
        "make_swiss_roll", "make_multilabel_classification", "make_friedman1", "make_friedman2", "make_friedman3",
        "make_gaussian_quantiles", "make_hastie_10_2")
}
# Functions returning a NumPy array whatever arrays they are handed (beyond
# the numpy module itself, whose functions all return arrays but for the
# generator constructors).
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
