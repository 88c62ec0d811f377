"""Optimizers and learning-rate schedules (Keras and TF1): their classes, default
learning rates, where their rates and step counts are, how they apply gradients."""
from __future__ import annotations

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
# Optimizer methods that apply gradients (one optimizer step) -> (keyword,
# position) of what names the updated variables, and whether that argument
# pairs them with the gradients: apply_gradients(zip(grads, vars)) (Keras 2
# and 3, TF1), Keras 3's apply(grads, vars). ``apply`` is a common method
# name (Dataset.apply): it counts only on a known Keras optimizer.
OPTIMIZER_APPLY_METHODS = {"apply_gradients": ("grads_and_vars", 0, True), "apply": ("trainable_variables", 1, False)}
GENERIC_APPLY_METHODS = {"apply"}
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
# Methods of a mixed-precision optimizer scaling a loss by its loss scale (tf-keras
# ``LossScaleOptimizer.get_scaled_loss``, Keras 3 ``Optimizer.scale_loss``): the
# result is the loss times a number, of the kind of the loss it is given.
OPTIMIZER_LOSS_SCALING_METHODS = {"get_scaled_loss": ("loss", 0), "scale_loss": ("loss", 0)}
# The names an optimizer's constructor takes its learning rate by.
LEARNING_RATE_KEYWORDS = ("learning_rate", "lr")
