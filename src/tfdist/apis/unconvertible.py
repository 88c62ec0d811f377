"""Code tfdist leaves alone: already distributed (Horovod, tf.distribute, DTensor),
not convertible (Estimator, TF1 eager gradients, Keras on another backend),
or training its own models (tuners, scikit-learn wrappers)."""
from __future__ import annotations

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
# AutoKeras' searches: fit() builds and trains one Keras model per trial
# itself, with Keras Tuner (its own oracle, trial files under directory=).
AUTOKERAS_SEARCHES = {f"{module}.{cls}" for module in ("autokeras", "autokeras.tasks")
                      for cls in ("AutoModel", "ImageClassifier", "ImageRegressor", "TextClassifier",
                                  "TextRegressor", "StructuredDataClassifier", "StructuredDataRegressor",
                                  "TimeseriesForecaster")}
# The methods that train an object of a library class (what the script calls
# on something tfdist does not know to be a Keras model, when it finds no
# training loop: said, not guessed).
TRAINING_METHODS = ("fit", "fit_generator", "train", "search")
# A tuner's attribute chain ending in a call that returns a Keras model the
# hypermodel builds (``tuner.hypermodel.build(best_hps)``).
KERAS_TUNER_MODEL_BUILDS = {("hypermodel", "build")}
# scikit-learn wrappers that build and fit Keras models themselves, inside
# scikit-learn's fit / cross_val_score / GridSearchCV (one model per fold).
KERAS_SKLEARN_WRAPPERS = {
    f"{module}.{cls}" for module in ("keras.wrappers.scikit_learn", "tensorflow.keras.wrappers.scikit_learn",
                                     "tensorflow.python.keras.wrappers.scikit_learn", "scikeras.wrappers")
    for cls in ("KerasClassifier", "KerasRegressor")}
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
# They return a function computing (gradient, variable) pairs of every
# trainable variable a loss touches; Horovod has no wrapper for them.
TF1_EAGER_IMPLICIT_GRADIENTS = {
    "tensorflow.contrib.eager.implicit_gradients",
    "tensorflow.contrib.eager.implicit_value_and_gradients",
    "tensorflow.contrib.eager.python.backprop.implicit_grad",
    "tensorflow.contrib.eager.python.backprop.implicit_val_and_grad",
}
# Reinforcement-learning environments (the Gym protocol: ``obs, reward, done, ... =
# env.step(action)``): their factories. Each process steps its own environment, whose
# episodes decide how many training steps it runs and on what.
RL_ENVIRONMENT_FACTORIES = {"gym.make", "gymnasium.make", "gym.vector.make", "gymnasium.vector.make",
                            "gym_super_mario_bros.make", "retro.make"}
# How many targets a Gym step's result is unpacked into, at least (obs, reward, done).
RL_STEP_RESULTS = 3
