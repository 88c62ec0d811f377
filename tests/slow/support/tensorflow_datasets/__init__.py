"""A stand-in for ``tensorflow_datasets`` that needs no download.

The real tfds cannot fetch data on the test machines. This package serves
synthetic data sets under real tfds names, made deterministically from the
name and split, with tfds' calling conventions and return shapes:

* ``load(name, split=None, ...)``: a ``tf.data.Dataset`` of feature dicts
  (``{"image": uint8, "label": int64}``) or, with ``as_supervised=True``,
  of ``(image, label)`` tuples; ``split`` a string (slicing such as
  ``"train[:80%]"``, ``"train[10:500]"``, ``"train+test"``), a list/tuple
  of them (a list of datasets comes back), or None (a dict by split name);
  ``with_info=True`` returns ``(result, info)``.
* ``builder(name)``: ``.info``, ``.download_and_prepare()`` and
  ``.as_dataset(split=...)``, as load() for the same arguments.
* Datasets have a known cardinality, as tfds' do.
* Records live in "files" (fixed shards of each split); ``shuffle_files``
  shuffles the file order (a random seed per process unless
  ``read_config=ReadConfig(shuffle_seed=...)``), reshuffled each iteration;
  ``ReadConfig(input_context=...)`` keeps every num_input_pipelines-th file.

Labels are a deterministic function of the image: every image is its class
template plus noise, so a small model learns it.
"""
from __future__ import annotations

import hashlib
import re
from dataclasses import dataclass, field
from typing import Dict, Optional

import numpy as np
import tensorflow as tf

__version__ = "4.9.3+standin"

FILES_PER_SPLIT = 4


class DatasetNotFoundError(ValueError):
    pass


class Split:
    TRAIN = "train"
    TEST = "test"
    VALIDATION = "validation"
    ALL = "all"


@dataclass
class ReadConfig:
    shuffle_seed: Optional[int] = None
    shuffle_reshuffle_each_iteration: Optional[bool] = None
    interleave_cycle_length: int = 16
    interleave_block_length: int = 16
    input_context: Optional[tf.distribute.InputContext] = None
    try_autocache: bool = True
    skip_prefetch: bool = False
    options: Optional[tf.data.Options] = None


@dataclass
class ClassLabel:
    num_classes: int

    @property
    def names(self):
        return [str(i) for i in range(self.num_classes)]


@dataclass
class Image:
    shape: tuple
    dtype: tf.DType = tf.uint8


@dataclass
class SplitInfo:
    name: str
    num_examples: int
    num_shards: int = FILES_PER_SPLIT


@dataclass
class DatasetInfo:
    name: str
    splits: Dict[str, SplitInfo]
    features: Dict[str, object]
    supervised_keys: tuple = ("image", "label")
    description: str = "synthetic stand-in data"
    homepage: str = ""
    citation: str = ""
    version: str = "3.0.1"
    file_format: str = "tfrecord"
    data_dir: str = ""
    download_size: int = 0
    dataset_size: int = 0


# name -> (image shape, number of classes, {split: number of examples})
_CATALOG = {
    "mnist": ((28, 28, 1), 10, {"train": 60000, "test": 10000}),
    "fashion_mnist": ((28, 28, 1), 10, {"train": 60000, "test": 10000}),
    "cifar10": ((32, 32, 3), 10, {"train": 50000, "test": 10000}),
    # the real one has one train split of 3670 images of varied sizes: small and few here (CPU runs)
    "tf_flowers": ((32, 32, 3), 5, {"train": 640}),
}


def list_builders():
    return sorted(_CATALOG)


def _seed(*parts) -> int:
    return int.from_bytes(hashlib.sha256("/".join(map(str, parts)).encode()).digest()[:8], "little")


def _templates(name):
    shape, classes, _ = _CATALOG[name]
    rng = np.random.default_rng(_seed(name, "templates"))
    return rng.integers(0, 256, size=(classes, *shape)).astype(np.float32)


_CACHE: Dict[tuple, tuple] = {}


def _examples(name, split, start, stop):
    """Images and labels [start, stop) of a split: deterministic per (name, split)."""
    key = (name, split, start, stop)
    if key not in _CACHE:
        shape, classes, _ = _CATALOG[name]
        templates = _templates(name)
        labels = np.empty(stop - start, np.int64)
        images = np.empty((stop - start, *shape), np.uint8)
        for i in range(start, stop):  # each example from its own index: slices agree
            rng = np.random.default_rng(_seed(name, split, i))
            label = int(rng.integers(classes))
            noise = rng.normal(0.0, 40.0, size=shape)
            labels[i - start] = label
            images[i - start] = np.clip(templates[label] * 0.6 + noise + 50, 0, 255).astype(np.uint8)
        _CACHE[key] = (images, labels)
    return _CACHE[key]


_SLICE = re.compile(r"^(\w+)(?:\[(-?\d*%?)?:(-?\d*%?)?\])?$")


def _bound(text, n, default):
    if text is None or text == "":
        return default
    if text.endswith("%"):
        v = int(round(int(text[:-1]) * n / 100))
    else:
        v = int(text)
    if v < 0:
        v += n
    return max(0, min(n, v))


def _ranges(name, split):
    """[(split name, start, stop)] for a split string like 'train[:80%]+test'."""
    _, _, sizes = _CATALOG[name]
    out = []
    for part in str(split).replace(" ", "").split("+"):
        m = _SLICE.match(part)
        if not m:
            raise ValueError(f"Unrecognized split format: {part!r}")
        base = m.group(1)
        if base == Split.ALL:
            out += [(s, 0, n) for s, n in sizes.items()]
            continue
        if base not in sizes:
            raise ValueError(f"Unknown split {base!r}. Should be one of {sorted(sizes)}.")
        n = sizes[base]
        out.append((base, _bound(m.group(2), n, 0), _bound(m.group(3), n, n)))
    return out


def _files(name, split):
    """The split's records, cut into FILES_PER_SPLIT files (like tfrecord shards)."""
    out = []
    for base, start, stop in _ranges(name, split):
        edges = np.linspace(start, stop, FILES_PER_SPLIT + 1).astype(int)
        out += [(base, int(a), int(b)) for a, b in zip(edges[:-1], edges[1:]) if b > a]
    return out


def _dataset(name, split, shuffle_files, as_supervised, read_config: Optional[ReadConfig]):
    read_config = read_config or ReadConfig()
    files = _files(name, split)
    ctx = read_config.input_context
    if ctx is not None and ctx.num_input_pipelines > 1:
        files = files[ctx.input_pipeline_id::ctx.num_input_pipelines]
    images = np.concatenate([_examples(name, *f)[0] for f in files]) if files else np.zeros((0, *_CATALOG[name][0]), np.uint8)
    labels = np.concatenate([_examples(name, *f)[1] for f in files]) if files else np.zeros((0,), np.int64)
    offsets = np.cumsum([0] + [b - a for _, a, b in files])
    total = int(offsets[-1])
    images_t = tf.constant(images)
    labels_t = tf.constant(labels)
    starts = tf.constant(offsets[:-1], tf.int64)
    stops = tf.constant(offsets[1:], tf.int64)
    order = tf.data.Dataset.range(len(files))
    if shuffle_files and len(files) > 1:
        reshuffle = read_config.shuffle_reshuffle_each_iteration
        order = order.shuffle(len(files), seed=read_config.shuffle_seed,
                              reshuffle_each_iteration=True if reshuffle is None else reshuffle)
    ds = order.flat_map(lambda i: tf.data.Dataset.range(starts[i], stops[i]))

    def example(j):
        if as_supervised:
            return tf.gather(images_t, j), tf.gather(labels_t, j)
        return {"image": tf.gather(images_t, j), "label": tf.gather(labels_t, j)}

    ds = ds.map(example)
    return ds.apply(tf.data.experimental.assert_cardinality(total))


def builder_info(name):
    if name not in _CATALOG:
        raise DatasetNotFoundError(f"Dataset {name} not found.")
    shape, classes, sizes = _CATALOG[name]
    return DatasetInfo(name=name, splits={s: SplitInfo(s, n) for s, n in sizes.items()},
                       features={"image": Image(shape), "label": ClassLabel(classes)})


def load(name, *, split=None, data_dir=None, batch_size=None, shuffle_files=False, download=True,
         as_supervised=False, decoders=None, read_config=None, with_info=False, builder_kwargs=None,
         download_and_prepare_kwargs=None, as_dataset_kwargs=None, try_gcs=False):
    """Like tfds.load: a dataset, a list of datasets, or a dict by split name."""
    name = name.split(":")[0].split("/")[0]
    info = builder_info(name)

    def one(s):
        ds = _dataset(name, s, shuffle_files, as_supervised, read_config)
        if batch_size is not None:
            ds = ds.batch(len(ds) if batch_size == -1 else batch_size)
        return ds

    if split is None:
        result = {s: one(s) for s in info.splits}
    elif isinstance(split, (list, tuple)):
        result = [one(s) for s in split]
    else:
        result = one(split)
    return (result, info) if with_info else result


class DatasetBuilder:
    """Like tfds.builder(name): ``info``, ``download_and_prepare()`` (nothing
    to fetch) and ``as_dataset(split=None, ...)``, which returns what load()
    returns for the same arguments."""

    def __init__(self, name):
        self.name = name.split(":")[0].split("/")[0]
        self.info = builder_info(self.name)

    def download_and_prepare(self, **kwargs):
        return None

    def as_dataset(self, split=None, *, batch_size=None, shuffle_files=False, decoders=None, read_config=None,
                   as_supervised=False):
        return load(self.name, split=split, batch_size=batch_size, shuffle_files=shuffle_files,
                    as_supervised=as_supervised, read_config=read_config)


def builder(name, **kwargs):
    return DatasetBuilder(name)


def as_numpy(dataset):
    if isinstance(dataset, dict):
        return {k: as_numpy(v) for k, v in dataset.items()}
    if isinstance(dataset, (list, tuple)):
        return type(dataset)(as_numpy(v) for v in dataset)
    return dataset.as_numpy_iterator()


def even_splits(split, n):
    return [f"{split}[{k * 100 // n}%:{(k + 1) * 100 // n}%]" for k in range(n)]


__all__ = ["load", "builder", "DatasetBuilder", "ReadConfig", "Split", "DatasetInfo", "list_builders", "as_numpy", "even_splits",
           "DatasetNotFoundError"]
