"""Canonical spellings: the aliases :func:`tfdist.engine.names.canonical` maps
every import style of TensorFlow and Keras names onto."""
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

# The top-level modules of TensorFlow and Keras: a name under one is the framework's own.
FRAMEWORK_ROOTS = ("tensorflow", "keras", "tf_keras")
# Modules whose functions compute from what they are given and nothing else
# the script keeps (random draws aside: apis.RANDOM_MODULE_PREFIXES):
# a value one of them returns is the step's own.
LIBRARY_ROOTS = ("tensorflow.", "keras.", "tf_keras.", "numpy.", "math.", "builtins.")
