"""Keras models, layers, callbacks, losses, and the arguments of ``Model.fit``."""
from __future__ import annotations

from .trackers import TRACKER_KERAS_CALLBACKS

# keras.models.X and keras.X name the same classes/functions.
KERAS_MODEL_CLASSES = {"keras.Model", "keras.Sequential"}
KERAS_MODEL_FACTORIES = {"keras.load_model", "keras.clone_model", "keras.model_from_json"}
# Factories whose model holds the weights of a file (the same on every worker, whatever the scope).
KERAS_MODEL_LOADERS = {"keras.load_model"}
KERAS_APPLICATIONS_PREFIX = "keras.applications."
# Pretrained-model libraries of Keras: their model classes (and the models
# their ``from_preset`` builds) are Keras models -- the task's new head
# randomly initialised -- except the preprocessing pieces named here.
KERAS_PRESET_MODEL_PREFIXES = ("keras_hub.models.", "keras_nlp.models.", "keras_cv.models.")
KERAS_PRESET_NON_MODELS = ("Tokenizer", "Preprocessor", "Converter", "Augmenter", "Sampler")
# Keras models other libraries define: Hugging Face transformers' TensorFlow
# classes (TFAutoModelForSequenceClassification.from_pretrained(...),
# TFBertForMaskedLM(config), TFBertModel) are keras.Model subclasses (tf-keras).
# A class under a prefix is a model when its name holds one of the markers.
KERAS_LIBRARY_MODEL_PREFIXES = ("transformers.TF",)
KERAS_LIBRARY_MODEL_MARKERS = ("Model", "For")
KERAS_LIBRARY_MODEL_FACTORIES = ("from_pretrained", "from_config")
KERAS_CALLBACK_BASES = {"keras.callbacks.Callback"}
TF_MODULE_BASES = {"tensorflow.Module", "keras.layers.Layer"}
# Callbacks that set the optimizer's rate each epoch from a function of the
# script's -> (keyword, position) of that function. Its rates replace the
# scaled one, so they are scaled in turn.
KERAS_EPOCH_RATE_CALLBACKS = {"keras.callbacks.LearningRateScheduler": ("schedule", 0)}
# Callbacks that write files: they run on rank 0 only (and the trackers' ones).
KERAS_RANK0_CALLBACKS = {
    "keras.callbacks.ModelCheckpoint",
    "keras.callbacks.TensorBoard",
    "keras.callbacks.CSVLogger",
}
KERAS_RANK0_CALLBACKS |= TRACKER_KERAS_CALLBACKS
# Callbacks driven by a metric: they must come after MetricAverageCallback.
KERAS_METRIC_CALLBACKS = {
    "keras.callbacks.EarlyStopping",
    "keras.callbacks.ReduceLROnPlateau",
}
KERAS_SAVE_FUNCTIONS = {"keras.save_model", "keras.saving.save_model", "tensorflow.saved_model.save"}
# Model methods that write files (Keras 3's export() writes a SavedModel; a
# Hugging Face TF model's save_pretrained(save_directory) its config and weights).
KERAS_SAVE_METHODS = {"save", "save_weights", "export", "save_pretrained"}
# What reads back a saved model, weights or checkpoint: function -> (keyword, position) of the
# path; method -> the same, with the kinds of object it is a method of.
READ_BACK_FUNCTIONS = {"keras.load_model": ("filepath", 0), "keras.saving.load_model": ("filepath", 0),
                       "tensorflow.saved_model.load": ("export_dir", 0),
                       "tensorflow.train.latest_checkpoint": ("checkpoint_dir", 0)}
READ_BACK_METHODS = {"load_weights": ("filepath", 0), "restore": ("save_path", 0), "read": ("save_path", 0)}
# Callbacks that write on the chief only themselves under a strategy (tf-keras / Keras 3 remove
# the other workers' copies): (keyword, position) of the path.
KERAS_CHIEF_WRITING_CALLBACKS = {"keras.callbacks.ModelCheckpoint": ("filepath", 0)}
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
# Model methods that only print.
KERAS_PRINT_METHODS = {"summary"}
# Keras Loss classes (modules their qualified names start with) and the
# reductions that make a Loss object return a mean: Keras 3 divides such a
# mean by the number of replicas when a strategy runs it.
KERAS_LOSS_MODULES = ("tensorflow.keras.losses.", "keras.losses.", "tf_keras.losses.")
# Where Keras layer classes live (layers.Normalization(), layers.experimental.preprocessing.Rescaling())
KERAS_LAYER_MODULES = ("keras.layers.",)
KERAS_MEAN_REDUCTIONS = {"auto", "sum_over_batch_size", "mean", "mean_with_sample_weight"}
# Functions giving one number whatever their argument (a count), or the shape of theirs (a cast).
NUMBER_FUNCTIONS = {"builtins.len", "builtins.float", "builtins.int", "tensorflow.size", "keras.ops.size"}
SHAPE_KEEPING_FUNCTIONS = {"tensorflow.cast", "keras.ops.cast", "tensorflow.stop_gradient", "keras.ops.stop_gradient"}
# Functions giving a tensor's shape (its elements are sizes).
SHAPE_FUNCTIONS = {"tensorflow.shape", "keras.ops.shape"}
# Functions reducing a tensor to one number when given no axis: (keyword, position) of the
# axis. A Loss subclass whose call() returns such a number is not divided by Keras 3's mean
# reduction (losses/loss.py reduce_values returns a scalar as it is).
TENSOR_FULL_REDUCTIONS = {
    f"{root}.{name}": ("axis", 1)
    for root in ("keras.ops", "tensorflow", "tensorflow.math", "numpy", "keras.backend")
    for name in (("mean", "sum") if root in ("keras.ops", "numpy", "keras.backend") else ("reduce_mean", "reduce_sum"))
}
# What Model.compile stores on the model as it was given: attribute -> (keyword, position) of
# compile's argument (Keras 3 trainers/trainer.py ``self.loss = loss``; tf-keras training.py
# ``self.loss = loss or {}``). ``self.loss(y, p)`` in a model's method calls that argument.
KERAS_COMPILE_STORED = {"loss": ("loss", 1)}
