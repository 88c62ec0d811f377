"""Stand-in for ``keras.datasets`` (no download): on a machine without
internet, every ``load_data()`` of mnist, fashion_mnist, cifar10, cifar100,
imdb, reuters, boston_housing and california_housing returns synthetic arrays
of the real per-sample shapes and dtypes, with labels that are a fixed,
learnable function of the samples (so a run that trains wrong shows in its
loss), the same in every process.

Put this directory on PYTHONPATH: Python imports ``sitecustomize`` at start
up. It patches the loaders after their modules are imported, whichever Keras
provides them (Keras 3 ``keras.src.datasets``, tf-keras, Keras 2).

TFDIST_STANDIN_TRAIN / TFDIST_STANDIN_TEST: samples per split (default 2048 / 512).
"""
import importlib.abc
import importlib.machinery
import os
import sys

NAMES = ("mnist", "fashion_mnist", "cifar10", "cifar100", "imdb", "reuters", "boston_housing",
         "california_housing")
TRAIN = int(os.environ.get("TFDIST_STANDIN_TRAIN", "2048"))
TEST = int(os.environ.get("TFDIST_STANDIN_TEST", "512"))


def _rng(name):
    import numpy as np
    return np.random.default_rng(sum(map(ord, name)))


def _images(name, shape, classes, label_shape=()):
    import numpy as np
    rng = _rng(name)
    n = TRAIN + TEST
    x = rng.integers(0, 256, size=(n,) + shape, dtype=np.uint8)
    projection = rng.normal(size=(int(np.prod(shape)), classes))
    scores = (x.reshape(n, -1).astype("float32") / 255 - 0.5) @ projection
    y = scores.argmax(axis=1).astype(np.uint8).reshape((n,) + label_shape)
    return (x[:TRAIN], y[:TRAIN]), (x[TRAIN:], y[TRAIN:])


def _sequences(name, classes, num_words, maxlen):
    import numpy as np
    rng = _rng(name)
    n = TRAIN + TEST
    vocabulary = num_words or 10000
    weights = rng.normal(size=(vocabulary, classes))
    xs, ys = [], []
    for _ in range(n):
        length = int(rng.integers(20, 200))
        if maxlen:
            length = min(length, maxlen)
        seq = rng.integers(4, vocabulary, size=length)
        xs.append([1] + seq.tolist())
        ys.append(int(weights[seq].sum(axis=0).argmax()))
    x = np.empty(n, dtype=object)
    x[:] = xs
    y = np.array(ys, dtype=np.int64)
    return (x[:TRAIN], y[:TRAIN]), (x[TRAIN:], y[TRAIN:])


def _table(name, features):
    import numpy as np
    rng = _rng(name)
    n = TRAIN + TEST
    x = rng.normal(size=(n, features)) * rng.uniform(1, 50, size=features) + rng.uniform(0, 100, size=features)
    y = (x - x.mean(axis=0)) / x.std(axis=0) @ rng.normal(size=features) + 20
    return (x[:TRAIN], y[:TRAIN]), (x[TRAIN:], y[TRAIN:])


def _word_index(num=10000):
    return {f"word{i}": i for i in range(1, num + 1)}


def _loaders(name):
    if name in ("mnist", "fashion_mnist"):
        return {"load_data": lambda *a, **k: _images(name, (28, 28), 10)}
    if name == "cifar10":
        return {"load_data": lambda *a, **k: _images(name, (32, 32, 3), 10, (1,))}
    if name == "cifar100":
        return {"load_data": lambda label_mode="fine", *a, **k: _images(
            name + label_mode, (32, 32, 3), 100 if label_mode == "fine" else 20, (1,))}
    if name in ("imdb", "reuters"):
        classes = 2 if name == "imdb" else 46

        def load_data(path=None, num_words=None, skip_top=0, maxlen=None, *a, **k):
            return _sequences(name, classes, num_words, maxlen)
        return {"load_data": load_data, "get_word_index": lambda *a, **k: _word_index()}
    if name == "boston_housing":
        return {"load_data": lambda *a, **k: _table(name, 13)}
    return {"load_data": lambda *a, **k: _table(name, 8)}


class _Patch(importlib.abc.MetaPathFinder):
    """After a module ``*.datasets.<name>`` runs, its loaders are replaced."""

    def find_spec(self, fullname, path=None, target=None):
        parts = fullname.split(".")
        if len(parts) < 3 or parts[-2] != "datasets" or parts[-1] not in NAMES:
            return None
        spec = importlib.machinery.PathFinder.find_spec(fullname, path)
        if spec is None or spec.loader is None or not hasattr(spec.loader, "exec_module"):
            return None
        loader, name = spec.loader, parts[-1]

        class Loader(importlib.abc.Loader):
            def create_module(self, spec):
                return loader.create_module(spec)

            def exec_module(self, module):
                loader.exec_module(module)
                for attr, fn in _loaders(name).items():
                    if hasattr(module, attr):
                        setattr(module, attr, fn)

        spec.loader = Loader()
        return spec


sys.meta_path.insert(0, _Patch())
