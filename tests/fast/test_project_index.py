"""Cross-module facts: classes defined (or re-exported) in other files of a project."""
from pathlib import Path

import libcst as cst
import pytest

from tfdist.api import convert_file, convert_source
from tfdist.engine.analysis import ClassFact, ProjectContext, module_class_facts
from tfdist.project import project_context_for_file
from tfdist.project.index import ProjectIndex, import_root, module_name, summarize, uses_tf

DATA = Path(__file__).parent / "data_project" / "crossmod"
MODEL = ["keras.Model"]


def facts(ctx: ProjectContext):
    return {k: (sorted(v.kinds), v.chain) for k, v in ctx.classes.items()}


@pytest.mark.parametrize("rel,name,classes", [
    ("train.py", "train", {"models.Net": (MODEL, ["Net", "BaseNet", "tensorflow.keras.Model"])}),
    ("train_alias.py", "train_alias", {
        "models.Net": (MODEL, ["Net", "BaseNet", "tensorflow.keras.Model"]),
        "models.Reg": (MODEL, ["Regressor", "Net", "BaseNet", "tensorflow.keras.Model"])}),
    ("pkg/sub/train_rel.py", "pkg.sub.train_rel", {"pkg.sub.Trunk": (MODEL, ["Backbone", "tensorflow.keras.Model"])}),
    ("scripts/run.py", "run", {"nets2.Tiny": (MODEL, ["Tiny", "tensorflow.keras.Model"])}),
    ("nets.py", "nets", {}),
])
def test_context_for_file(rel, name, classes):
    ctx = project_context_for_file(str(DATA / rel))
    assert (ctx.module_name, ctx.is_package) == (name, False)
    assert facts(ctx) == classes


@pytest.mark.parametrize("rel,construct", [
    ("train_alias.py", "model.fit(...) on a Keras model (Regressor)"),
    ("pkg/sub/train_rel.py", "net.fit(...) on a Keras model (Backbone)"),
    ("scripts/run.py", "m.fit(...) on a Keras model (Tiny)"),
])
def test_conversion_needs_the_other_modules(rel, construct):
    path = DATA / rel
    with_index = convert_file(path)
    assert with_index.status == "converted"
    assert [e.construct for e in with_index.evidence] == [construct]
    alone = convert_source(path.read_bytes(), str(path), project=ProjectContext())
    # Without the other modules the model class is unknown: no training loop.
    assert alone.no_training and alone.data is None
    # The index's context gives exactly what a hand-made context gives the engine.
    ctx = project_context_for_file(str(path))
    by_hand = ProjectContext(ctx.module_name, ctx.is_package,
                             {k: ClassFact(v.name, set(v.kinds), list(v.chain)) for k, v in ctx.classes.items()})
    assert convert_source(path.read_bytes(), str(path), project=by_hand).data == with_index.data


def test_index_agrees_with_engine_module_class_facts():
    """The ast-based index gives the facts the engine's own LibCST analysis gives."""
    order = [("nets.py", "nets", False), ("models/heads.py", "models.heads", False), ("pkg/base.py", "pkg.base", False),
             ("scripts/nets2.py", "nets2", False)]
    known = {}
    for rel, name, is_pkg in order:
        module = cst.parse_module((DATA / rel).read_bytes())
        known.update(module_class_facts(module, name, is_pkg, known))
    engine = {k: (sorted(v.kinds), v.chain) for k, v in known.items() if v.kinds}
    index = ProjectIndex([str(DATA)], lazy=True)
    mine = {}
    for rel, name, _ in order:
        for cls in summarize(str(DATA / rel), (DATA / rel).read_bytes()).classes:
            roots = index.search_roots(str(DATA / rel))
            f = index.fact(f"{name}.{cls}", roots)
            if f is not None:
                mine[f"{name}.{cls}"] = (sorted(f.kinds), f.chain)
    assert mine == engine
    assert "models.heads.NotAModel" not in mine


def test_module_names_and_import_roots(tmp_path):
    (tmp_path / "a" / "b").mkdir(parents=True)
    (tmp_path / "a" / "__init__.py").write_text("")
    (tmp_path / "a" / "b" / "__init__.py").write_text("")
    f = tmp_path / "a" / "b" / "c.py"
    f.write_text("")
    assert import_root(str(f)) == str(tmp_path)
    assert module_name(str(f), str(tmp_path)) == "a.b.c"
    assert module_name(str(tmp_path / "a" / "b" / "__init__.py"), str(tmp_path)) == "a.b"
    assert module_name(str(tmp_path / "my-script.py"), str(tmp_path)) is None


def test_cycles_and_star_imports_terminate(tmp_path):
    (tmp_path / "a.py").write_text("from b import B\n\nclass A(B):\n    pass\n")
    (tmp_path / "b.py").write_text("from a import A\n\nclass B(A):\n    pass\n")
    (tmp_path / "base.py").write_text("import tensorflow as tf\n\nclass M(tf.keras.Model):\n    pass\n")
    (tmp_path / "star.py").write_text("from base import *\n")
    (tmp_path / "train.py").write_text("import a\nfrom star import M\nfrom b import B\n")
    ctx = project_context_for_file(str(tmp_path / "train.py"))
    assert facts(ctx) == {"star.M": (MODEL, ["M", "tensorflow.keras.Model"])}


def test_name_collisions_prefer_the_files_own_folder(tmp_path):
    for d, base in (("one", "keras.Model"), ("two", "object")):
        (tmp_path / d).mkdir()
        (tmp_path / d / "nets.py").write_text(f"import keras\n\nclass Net({base}):\n    pass\n")
        (tmp_path / d / "train.py").write_text("from nets import Net\n")
    one = project_context_for_file(str(tmp_path / "one" / "train.py"))
    two = project_context_for_file(str(tmp_path / "two" / "train.py"))
    assert facts(one) == {"nets.Net": (MODEL, ["Net", "keras.Model"])}
    assert facts(two) == {}


def test_broken_sibling_never_stops_the_file(tmp_path):
    (tmp_path / "nets.py").write_bytes(b"def broken(:\n\x00\xff")
    (tmp_path / "train.py").write_text("from nets import Net\nimport tensorflow as tf\n")
    assert facts(project_context_for_file(str(tmp_path / "train.py"))) == {}


SHUFFLING_HELPER = """import numpy as np


def get_normalized_data():
    data = np.loadtxt("train.csv", delimiter=",")
    np.random.shuffle(data)
    X, Y = data[:, 1:], data[:, 0]
    return X[:-1000], X[-1000:], Y[:-1000], Y[-1000:]


def get_seeded_data():
    np.random.seed(0)
    data = np.loadtxt("train.csv", delimiter=",")
    np.random.shuffle(data)
    return data[:, 1:], data[:, 0]
"""

KERAS_TRAIN = """import tensorflow as tf
from util import {helper}


def main():
    {targets} = {helper}()
    model = tf.keras.Sequential([tf.keras.layers.Dense(10)])
    model.compile(optimizer=tf.keras.optimizers.SGD(0.01), loss="mse")
    model.fit(Xtrain, Ytrain, epochs=2)


main()
"""


@pytest.mark.parametrize("backend", ["horovod", "tf-distribute"])
def test_helper_of_another_module_shuffling_unseeded_is_seeded_before_its_call(tmp_path, backend):
    """util.get_normalized_data() shuffles with NumPy's global generator and
    no seed: each rank would split its own way and the rank shares would
    overlap. NumPy is seeded alike right before the call (the helper stays
    as it is); a helper seeding NumPy itself gets nothing."""
    (tmp_path / "util.py").write_text(SHUFFLING_HELPER)
    train = tmp_path / "train.py"
    train.write_text(KERAS_TRAIN.format(helper="get_normalized_data", targets="Xtrain, Xtest, Ytrain, Ytest"))
    result = convert_file(train, backend=backend)
    lines = result.code.splitlines()
    call = next(i for i, line in enumerate(lines) if "= get_normalized_data()" in line)
    assert lines[call - 1].strip() == "np.random.seed(1234)", result.code
    assert "import numpy as np" in result.code
    assert any("get_normalized_data() reorders the data with NumPy's global generator" in f.message
               for f in result.changes)
    train.write_text(KERAS_TRAIN.format(helper="get_seeded_data", targets="Xtrain, Ytrain"))
    seeded = convert_file(train, backend=backend)
    assert "np.random.seed(1234)" not in seeded.code
    assert "get_seeded_data()" in seeded.code


DATASET_UTILS = """import tensorflow as tf


def create_dataset(batch_size, seed=42):
    (x, y), (xt, yt) = tf.keras.datasets.mnist.load_data()
    train = tf.data.Dataset.from_tensor_slices((x / 255.0, y))
    train = train.shuffle(1000, seed=seed).batch(batch_size)
    test = tf.data.Dataset.from_tensor_slices((xt / 255.0, yt)).batch(batch_size)
    return train, test, {"classes": 10}
"""

TRAINER = """import tensorflow as tf
from proj.models import utils


class Train(object):
    def __init__(self, epochs, model):
        self.epochs = epochs
        self.optimizer = tf.keras.optimizers.SGD(learning_rate=0.1, momentum=0.9)
        self.loss_object = tf.keras.losses.SparseCategoricalCrossentropy(from_logits=True)
        self.model = model

    def train_step(self, image, label):
        with tf.GradientTape() as tape:
            loss = self.loss_object(label, self.model(image, training=True))
        grads = tape.gradient(loss, self.model.trainable_variables)
        self.optimizer.apply_gradients(zip(grads, self.model.trainable_variables))

    def custom_loop(self, train_dataset):
        for epoch in range(self.epochs):
            for image, label in train_dataset:
                self.train_step(image, label)

    def keras_fit(self, train_dataset):
        self.model.compile(optimizer=self.optimizer, loss=self.loss_object)
        self.model.fit(train_dataset, epochs=self.epochs)


def main(mode="custom"):
    model = tf.keras.Sequential([tf.keras.layers.Flatten(), tf.keras.layers.Dense(10)])
    trainer = Train(2, model)
    train_dataset, test_dataset, _ = utils.create_dataset(64)
    if mode == "custom":
        return trainer.custom_loop(train_dataset)
    return trainer.keras_fit(train_dataset)


if __name__ == "__main__":
    main()
"""


@pytest.mark.parametrize("backend", ["horovod", "tf-distribute"])
def test_dataset_unpacked_from_a_helper_of_another_module_reaches_a_method_loop(tmp_path, backend):
    """tensorflow/examples' shape: main() unpacks (train, test, info) from
    utils.create_dataset() of the package and hands train to a method whose
    step loop iterates it (and to one that fits it). The train dataset is
    divided where it is unpacked, once; the loop's steps follow it; the
    optimizer the class keeps in self.optimizer is known at compile()."""
    pkg = tmp_path / "proj" / "models"
    pkg.mkdir(parents=True)
    (tmp_path / "proj" / "__init__.py").write_text("")
    (pkg / "__init__.py").write_text("")
    (pkg / "utils.py").write_text(DATASET_UTILS)
    train = pkg / "train.py"
    train.write_text(TRAINER)
    result = convert_file(train, backend=backend)
    assert result.status == "converted", result.error
    said = [w.message for w in result.warnings]
    if backend == "horovod":
        assert not said, said
    else:
        # a tape step and fit() in one tf.keras file: multi-worker fit needs tf-keras, where the
        # step's loss object raises (measured on 2 workers); said, not guessed
        assert len(said) == 1 and "runs on tf-keras (keras-team/keras#20585)" in said[0], said
    lines = result.code.splitlines()
    unpack = next(i for i, line in enumerate(lines) if "= utils.create_dataset(" in line)
    if backend == "horovod":
        assert lines[unpack + 2].strip() == ("train_dataset = train_dataset.apply(lambda ds: ds.shard(hvd.size(), "
                                             "hvd.rank()).take(ds.cardinality() // hvd.size()))"), result.code
        assert "optimizer=hvd_keras.DistributedOptimizer(self.optimizer)" in result.code
        assert "hvd.DistributedGradientTape(tape)" in result.code
    else:
        assert "utils.create_dataset(64 * strategy.num_replicas_in_sync)" in lines[unpack]
        assert lines[unpack + 1].strip() == "train_dataset = shard_by_sample(train_dataset)", result.code
        assert "in strategy.experimental_distribute_dataset(train_dataset):" in result.code
    # only the training dataset is divided, once
    assert [line.split("=")[0].strip() for line in lines if "shard" in line and "=" in line
            and "def " not in line and "policy" not in line] == ["train_dataset"], result.code
    assert (pkg / "utils.py").read_text() == DATASET_UTILS  # the helper's module is not edited


@pytest.mark.parametrize("src,hit", [
    (b"import tensorflow as tf\n", True),
    (b"from tensorflow import keras\n", True),
    (b"import os, keras\n", True),
    (b"    from keras.layers import Dense\n", True),
    (b"import tf_keras as keras\n", True),
    (b'{"source": ["import tensorflow as tf\\n"]}', True),
    (b"import numpy as np\n# tensorflow is great\n", False),
    (b"x = 'keras'\n", False),
    (b"import tensorflowx\n", False),
])
def test_tf_regex(src, hit):
    assert uses_tf(src) is hit


def test_sklearn_wrapper_beside_converted_fit_is_warned_in_each_engines_terms():
    """A KerasRegressor sharing the model builder with a converted fit():
    Horovod would average its gradients across differently initialised
    models; tf.distribute mirrors it with the scaled rate but keeps the
    wrapper's global batch. Each engine says its own consequence."""
    source = (Path(__file__).parent / "fixtures" / "keras" / "sklearn_wrapper_beside_fit" / "input.py").read_bytes()
    said = {}
    for backend in ("horovod", "tf-distribute"):
        result = convert_source(source, "wrapped.py", backend=backend)
        assert result.status == "converted", result.error
        said[backend] = [w for w in result.warnings if "KerasRegressor trains Keras models" in w.message]
        assert [w.line for w in said[backend]] == [21]
    assert "differently initialised models" in said["horovod"][0].message
    assert "strategy.scope()" in said["tf-distribute"][0].message
    assert "strategy.num_replicas_in_sync" in said["tf-distribute"][0].message


def test_sklearn_wrapper_fit_by_the_script_is_not_warned_under_horovod():
    """The wrapper's own fit() passes its keywords to the model's fit: it is
    converted like a model's (no warning) under Horovod; tf.distribute still
    says the wrapper's constructor settings are not read."""
    source = (Path(__file__).parent / "fixtures" / "keras" / "sklearn_wrapper_fit_directly" / "input.py").read_bytes()
    hvd = convert_source(source, "direct.py", backend="horovod")
    # only the Keras 2 ``SGD(lr=...)``'s warning (the default rate is the one scaled), none about the wrapper
    assert hvd.status == "converted" and [w.rule for w in hvd.warnings] == ["lr-scaling"], hvd.warnings
    assert "BroadcastGlobalVariablesCallback" in hvd.code
    tfd = convert_source(source, "direct.py", backend="tf-distribute")
    assert [w.line for w in tfd.warnings if "KerasClassifier trains Keras models itself" in w.message] == [27]


def test_keras_tuner_search_beside_converted_fit_is_warned_in_each_engines_terms():
    """The search of a Keras Tuner tuner trains one model per trial inside
    Keras Tuner: warned at the tuner, with each engine's edit."""
    source = (Path(__file__).parent / "fixtures" / "keras" / "keras_tuner_search_beside_fit" / "input.py").read_bytes()
    said = {}
    for backend in ("horovod", "tf-distribute"):
        result = convert_source(source, "tuned.py", backend=backend)
        assert result.status == "converted", result.error
        said[backend] = [w for w in result.warnings if "inside Keras Tuner" in w.message]
        assert [w.line for w in said[backend]] == [24]
    assert "run the search on one process" in said["horovod"][0].message
    assert "distribution_strategy=strategy" in said["tf-distribute"][0].message


def _assert_random_seeded_right_before_fit(code: str) -> None:
    lines = code.splitlines()
    fit = next(i for i, line in enumerate(lines) if "model.fit(" in line)
    assert lines[fit - 1].strip() == "random.seed(1234)", code


GENERATOR_MODULE = """import random

import numpy as np


def paths(items):
    while True:
        random.shuffle(items)
        for item in items:
            yield item


def data_generator(x, y, batch_size):
    rows = paths(list(range(len(x))))
    while True:
        picked = [next(rows) for _ in range(batch_size)]
        yield x[picked], y[picked]
"""

GENERATOR_TRAIN = """import numpy as np
import tensorflow as tf
from datagen import data_generator

x = np.random.rand(512, 4).astype("float32")
y = np.random.rand(512, 1).astype("float32")
train_set = data_generator(x, y, 16)
model = tf.keras.Sequential([tf.keras.layers.Dense(1)])
model.compile(optimizer=tf.keras.optimizers.SGD(0.01), loss="mse")
model.fit(train_set, steps_per_epoch=32, epochs=2)
"""


@pytest.mark.parametrize("backend,shared", [("horovod", "rank_share(train_set)"),
                                            ("tf-distribute", "sequence_dataset(train_set)")])
def test_a_generator_of_another_module_is_shared_with_its_python_random_order_seeded_alike(tmp_path, backend, shared):
    """fit() on a generator function of another module of the project: it
    is read as this file's generators are (every rank keeps every size-th
    batch; every worker the batches at its replicas' places). It shuffles
    with Python's random, two calls deep and without a seed, so Python's
    random is seeded the same on every process before fit(): the shares are
    of the same order."""
    (tmp_path / "datagen.py").write_text(GENERATOR_MODULE)
    train = tmp_path / "train.py"
    train.write_text(GENERATOR_TRAIN)
    result = convert_file(train, backend=backend)
    assert result.status == "converted", result.error
    assert shared in result.code, result.code
    _assert_random_seeded_right_before_fit(result.code)
    assert any("generator of module datagen" in c.message or "orders its data with Python random" in c.message
               for c in result.changes), [c.message for c in result.changes]
    assert not [w for w in result.warnings if w.rule == "data-division"], result.warnings


FLOWS_MODULE = """import numpy as np
from tensorflow.keras.preprocessing.image import ImageDataGenerator


def generators(x, y, batch_size=32):
    train_datagen = ImageDataGenerator(rotation_range=20, horizontal_flip=True)
    test_datagen = ImageDataGenerator()
    train_generator = train_datagen.flow(x[:400], y[:400], batch_size=batch_size)
    validation_generator = test_datagen.flow(x[400:], y[400:], batch_size=batch_size)
    return train_generator, validation_generator


def arrays(x, y):
    return x[:400], y[:400]
"""

FLOWS_TRAIN = """import numpy as np
import tensorflow as tf
from flows import generators, arrays

x = np.random.rand(500, 8, 8, 3).astype("float32")
y = np.random.randint(0, 2, 500)
MAKE
model = tf.keras.Sequential([tf.keras.layers.Flatten(), tf.keras.layers.Dense(2)])
model.compile(optimizer=tf.keras.optimizers.SGD(0.01), loss="sparse_categorical_crossentropy")
FIT
"""


@pytest.mark.parametrize("backend,wrapper", [("horovod", "RankShardedSequence"), ("tf-distribute", "sequence_dataset")])
def test_flows_returned_by_a_function_of_another_module_are_read_as_sequences(tmp_path, backend, wrapper):
    """train_generator, validation_generator = generators(...) of another
    module: every return of the helper holds ImageDataGenerator flows there,
    so both are read by index as Sequences (the helper stays as it is); a
    helper returning arrays at those places is not taken for one."""
    (tmp_path / "flows.py").write_text(FLOWS_MODULE)
    train = tmp_path / "train.py"
    train.write_text(FLOWS_TRAIN.replace("MAKE", "train_gen, val_gen = generators(x, y)")
                     .replace("FIT", "model.fit(train_gen, validation_data=val_gen, epochs=2)"))
    result = convert_file(train, backend=backend)
    assert result.status == "converted", result.error
    assert f"{wrapper}(train_gen)" in result.code and f"validation_data={wrapper}(val_gen" in result.code, result.code
    assert not [w for w in result.warnings if w.rule == "data-division"], result.warnings
    train.write_text(FLOWS_TRAIN.replace("MAKE", "train_x, train_y = arrays(x, y)")
                     .replace("FIT", "model.fit(train_x, epochs=2)"))
    other = convert_file(train, backend=backend)
    assert wrapper + "(" not in other.code


READER_MODULE = """import random

import numpy as np


class Data:
    def __init__(self, inputs, targets):
        self.inputs, self.targets = inputs, targets

    def generator(self, batch_size):
        ids = range(len(self.inputs))
        while True:
            rows = random.sample(ids, batch_size)
            yield self.inputs[rows], self.targets[rows]
"""

READER_TRAIN = """import numpy as np
import tensorflow as tf
from reader import Data

training = Data(np.random.rand(512, 4).astype("float32"), np.random.rand(512, 1).astype("float32"))
model = tf.keras.Sequential([tf.keras.layers.Dense(1)])
model.compile(optimizer=tf.keras.optimizers.SGD(0.01), loss="mse")
model.fit(training.generator(32), steps_per_epoch=16, epochs=2)
"""


@pytest.mark.parametrize("backend,shared", [("horovod", "rank_share(training.generator(32))"),
                                            ("tf-distribute", "sequence_dataset(training.generator(32))")])
def test_a_generator_method_of_a_class_of_another_module_is_shared_like_this_files(tmp_path, backend, shared):
    """training.generator(32) on an instance of a class another module of
    the project defines: its method is read there (a generator drawing rows
    with Python's random), so the stream is shared as this file's
    generators are, Python's random seeded alike before fit()."""
    (tmp_path / "reader.py").write_text(READER_MODULE)
    train = tmp_path / "train.py"
    train.write_text(READER_TRAIN)
    result = convert_file(train, backend=backend)
    assert result.status == "converted", result.error
    assert shared in result.code, result.code
    _assert_random_seeded_right_before_fit(result.code)
    assert not [w for w in result.warnings if w.rule == "data-division"], result.warnings


@pytest.mark.parametrize("namespace", [False, True])
def test_a_name_a_package_re_exports_from_its_same_named_submodule_is_the_class(tmp_path, namespace):
    """``from modules.models import VAE`` with ``modules/models/__init__.py``
    doing ``from modules.models.VAE import VAE``: Python binds the class
    (the package's own binding replaces the submodule attribute), so the
    notebook's ``vae = VAE(...)`` then ``vae.fit(...)`` trains a Keras model
    -- it was taken for the module VAE.py and the script for one without a
    training loop. Also where ``modules/`` has no ``__init__.py`` (a namespace
    package, importable from the notebook's folder)."""
    pkg = tmp_path / "modules" / "models"
    pkg.mkdir(parents=True)
    if not namespace:
        (tmp_path / "modules" / "__init__.py").write_text("")
    (pkg / "__init__.py").write_text("from modules.models.VAE import VAE\n")
    (pkg / "VAE.py").write_text("import tensorflow as tf\n\n\nclass VAE(tf.keras.Model):\n"
                                "    def call(self, x):\n        return x\n")
    train = tmp_path / "train.py"
    train.write_text("import numpy as np\nimport tensorflow as tf\nfrom modules.models import VAE\n\n"
                     "x = np.random.rand(64, 4).astype('float32')\nvae = VAE()\nvae.compile(optimizer='adam', loss='mse')\n"
                     "vae.fit(x, x, epochs=1)\n")
    result = convert_file(train)
    assert result.status == "converted", result.error
    assert "hvd.DistributedOptimizer" in result.code


def test_a_namespace_package_beside_a_script_in_a_subfolder_of_the_tree_resolves(tmp_path):
    """A tree converted from its root, the script in ``VAE/`` importing
    ``from modules.models import VAE`` where ``VAE/modules`` has no
    ``__init__.py``: the class is found through the folder the package was
    found from (the package's own import root is ``VAE/modules``)."""
    pkg = tmp_path / "VAE" / "modules" / "models"
    pkg.mkdir(parents=True)
    (pkg / "__init__.py").write_text("from modules.models.VAE import VAE\n")
    (pkg / "VAE.py").write_text("from tensorflow import keras\n\n\nclass VAE(keras.Model):\n    pass\n")
    script = tmp_path / "VAE" / "train.py"
    script.write_text("from modules.models import VAE\n")
    index = ProjectIndex([str(tmp_path)], {}, lazy=True)
    context = index.context_for(str(script), summarize(str(script), script.read_bytes()))
    assert "keras.Model" in context.classes["modules.models.VAE"].kinds
