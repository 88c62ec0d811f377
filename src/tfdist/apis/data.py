"""Input pipelines: tf.data sources, methods and combiners, TensorFlow Datasets,
Keras directory and array readers, image generators and Sequences."""
from __future__ import annotations

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
# Functions that count a dataset's or a Sequence's elements.
COUNT_FUNCTIONS = {"len", "tensorflow.data.experimental.cardinality"}
COUNT_METHODS = {"cardinality", "__len__"}
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
