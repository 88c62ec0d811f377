"""TF1 graph-mode training: sessions, savers, tutorial data sets, queue pipelines."""
from __future__ import annotations

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
