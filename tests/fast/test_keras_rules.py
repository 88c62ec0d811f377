"""Keras rule cases too small for a whole-script fixture."""

import os

import pytest

from tfdist.api import convert_source
from tfdist.options import Options


def test_keras_callbacks_none_is_treated_as_absent():
    src = (
        "import tensorflow as tf\n"
        "model = tf.keras.Sequential([tf.keras.layers.Dense(1)])\n"
        "model.compile(optimizer='sgd', loss='mse')\n"
        "model.fit(tf.zeros([8, 2]), tf.zeros([8, 1]), callbacks=None)\n"
    )
    out = convert_source(src, "cb_none.py").code
    assert "callbacks=[hvd.callbacks.BroadcastGlobalVariablesCallback(0), hvd.callbacks.MetricAverageCallback()]" in out
    assert "*None" not in out


FIT_TAIL = (
    "model = tf.keras.Sequential([tf.keras.layers.Dense(1)])\n"
    "model.compile(optimizer='sgd', loss='mse')\n"
    "model.fit(tf.zeros([8, 2]), tf.zeros([8, 1]), epochs=1)\n"
)


def test_every_spelling_of_tf_distribute_and_dtensor_is_already_distributed():
    spellings = [
        "import tensorflow as tf\nstrategy = tf.distribute.MirroredStrategy()\n",
        "import tensorflow as tf\nstrategy = tf.compat.v1.distribute.MirroredStrategy()\n",
        "import tensorflow as tf\nstrategy = tf.contrib.distribute.MirroredStrategy()\n",
        "import tensorflow as tf\nfrom tensorflow import distribute\n",
        "import tensorflow as tf\nfrom tensorflow.distribute import MirroredStrategy\n",
        "import tensorflow as tf\nimport tensorflow.compat.v1 as v1\nassert not isinstance(None, v1.distribute.Strategy)\n",
        "import tensorflow as tf\nfrom tensorflow.experimental import dtensor\n",
        "import tensorflow as tf\nmesh = tf.experimental.dtensor.create_mesh([('batch', 1)])\n",
        "import tensorflow as tf\nfrom tensorflow.keras.utils import multi_gpu_model\n",
    ]
    for head in spellings:
        src = head + FIT_TAIL
        if "multi_gpu_model" in head:
            src += "parallel = multi_gpu_model(model, gpus=2)\n"
        r = convert_source(src, "dist.py")
        assert r.status == "already-distributed", (head, r.status)
        assert r.data == src.encode()


def test_single_callback_of_unknown_sort_keeps_the_warning():
    """A name bound to a file-writing callback on one branch and to another one
    on the other cannot be put on rank 0 only (EarlyStopping must run everywhere)."""
    src = (
        "import sys\n"
        "import tensorflow as tf\n"
        "if len(sys.argv) > 1:\n"
        "    cb = tf.keras.callbacks.TensorBoard('logs')\n"
        "else:\n"
        "    cb = tf.keras.callbacks.EarlyStopping(patience=1)\n"
        "model = tf.keras.Sequential([tf.keras.layers.Dense(1)])\n"
        "model.compile(optimizer='sgd', loss='mse')\n"
        "model.fit(tf.zeros([8, 2]), tf.zeros([8, 1]), callbacks=cb)\n"
    )
    r = convert_source(src, "cb_mixed.py")
    assert any("callbacks in cb are unknown" in w.message for w in r.warnings)


def test_callback_helper_used_elsewhere_gets_the_engine_callbacks_at_the_fit():
    """A helper whose list also reaches evaluate(): its TensorBoard is kept
    on rank 0 in the helper, and the engine's callbacks are made at the
    fit() only (evaluate() must not get a broadcast callback)."""
    src = (
        "import tensorflow as tf\n"
        "def cbs():\n"
        "    return [tf.keras.callbacks.TensorBoard('logs')]\n"
        "model = tf.keras.Sequential([tf.keras.layers.Dense(1)])\n"
        "model.compile(optimizer='sgd', loss='mse')\n"
        "model.fit(tf.zeros([8, 2]), tf.zeros([8, 1]), callbacks=cbs())\n"
        "model.evaluate(tf.zeros([8, 2]), tf.zeros([8, 1]), callbacks=cbs())\n"
    )
    r = convert_source(src, "cb_helper.py")
    assert "return ([tf.keras.callbacks.TensorBoard('logs')] if hvd.rank() == 0 else [])" in r.code
    assert "callbacks=[hvd.callbacks.BroadcastGlobalVariablesCallback(0), hvd.callbacks.MetricAverageCallback(), *cbs()]" in r.code
    assert "model.evaluate(tf.zeros([8, 2]), tf.zeros([8, 1]), callbacks=cbs()," in r.code
    assert not r.warnings


def test_callbacks_bound_from_a_helper_are_followed_to_its_lists():
    """callbacks = make_callbacks(name) then fit(callbacks=callbacks): the
    helper's returned list (a literal, or a name appended to) is followed."""
    src = (
        "import tensorflow as tf\n"
        "def make_callbacks(name):\n"
        "    found = [tf.keras.callbacks.EarlyStopping(patience=2)]\n"
        "    found.append(tf.keras.callbacks.CSVLogger(name + '.csv'))\n"
        "    return found\n"
        "model = tf.keras.Sequential([tf.keras.layers.Dense(1)])\n"
        "model.compile(optimizer='sgd', loss='mse')\n"
        "callbacks = make_callbacks('run')\n"
        "model.fit(tf.zeros([8, 2]), tf.zeros([8, 1]), callbacks=callbacks)\n"
    )
    r = convert_source(src, "cb_bound.py")
    assert "    if hvd.rank() == 0:\n        found.append(tf.keras.callbacks.CSVLogger(name + '.csv'))" in r.code
    assert "callbacks=[hvd.callbacks.BroadcastGlobalVariablesCallback(0), hvd.callbacks.MetricAverageCallback(), *callbacks]" in r.code
    assert not r.warnings
    unknown = src.replace("    return found\n", "    return found if name else None\n")
    r = convert_source(unknown, "cb_unknown.py")
    assert any("callbacks in callbacks are unknown" in w.message for w in r.warnings)


def test_optimizer_from_a_helper_with_unknown_callers_is_not_followed():
    """optimizer=None filled from an argument tfdist cannot see: warn, do not guess."""
    src = (
        "import tensorflow as tf\n"
        "def get_optimizer():\n"
        "    return tf.keras.optimizers.Adam(0.01)\n"
        "def train(model, optimizer=None):\n"
        "    if optimizer is None:\n"
        "        optimizer = get_optimizer()\n"
        "    model.compile(optimizer=optimizer, loss='mse')\n"
        "    model.fit(tf.zeros([8, 2]), tf.zeros([8, 1]))\n"
        "train(tf.keras.Sequential([tf.keras.layers.Dense(1)]), optimizer=make_sgd())\n"
    )
    r = convert_source(src, "opt_helper.py")
    assert "0.01 * hvd.size()" not in r.code
    # get_optimizer() builds one here (scaled where it is built): scaling the
    # parameter at compile() could scale that one twice, so it is not done
    assert "with_scaled_learning_rate" not in r.code
    assert any("cannot tell where optimizer is built" in w.message for w in r.warnings)


def test_endless_input_after_a_shuffle_of_unknown_data_is_not_sharded():
    """A .repeat() pipeline whose data comes from a parameter: its order may differ per rank."""
    src = (
        "import tensorflow as tf\n"
        "def train(ds, model):\n"
        "    ds = ds.shuffle(100).repeat().batch(8)\n"
        "    model.fit(ds, epochs=1, steps_per_epoch=10)\n"
        "model = tf.keras.Sequential([tf.keras.layers.Dense(1)])\n"
        "model.compile(optimizer='sgd', loss='mse')\n"
        "train(load_data(), model)\n"
    )
    r = convert_source(src, "endless.py")
    assert ".shard(" not in r.code
    assert any(w.rule == "data-division" for w in r.warnings)


def test_every_optimizer_class_is_known_by_its_compile_string_on_both_engines():
    """compile(optimizer="lion") and the class table are one fact: every
    class tfdist knows a default rate for converts from its string too, with
    that rate written out and scaled."""
    from tfdist import apis
    for name, lr in apis.KERAS_OPTIMIZER_DEFAULT_LR.items():
        src = ("import tensorflow as tf\n"
               "model = tf.keras.Sequential([tf.keras.layers.Dense(1)])\n"
               f"model.compile(optimizer='{name.lower()}', loss='mse')\n"
               "model.fit(tf.zeros([8, 2]), tf.zeros([8, 1]), epochs=1)\n")
        for backend, size in (("horovod", "hvd.size()"), ("tf-distribute", "strategy.num_replicas_in_sync")):
            result = convert_source(src, "opt.py", backend=backend)
            assert result.status == "converted", (name, backend, result.error)
            assert f"tf.keras.optimizers.{name}(learning_rate={lr!r} * {size})" in result.code, (name, backend)


def test_fault_tolerant_puts_backup_and_restore_first_in_every_callbacks_form():
    key = Options(backend="tf-distribute", fault_tolerant=True)
    backup = "tf.keras.callbacks.BackupAndRestore(backup_dir='./backup_and_restore')"  # the file's quotes
    head = ("import tensorflow as tf\n"
            "model = tf.keras.Sequential([tf.keras.layers.Dense(1)])\n"
            "model.compile(optimizer='sgd', loss='mse')\n"
            "stop = tf.keras.callbacks.EarlyStopping()\n"
            "cbs = [stop]\n")
    cases = {
        "": f"callbacks=[{backup}]",
        ", callbacks=None": f"callbacks=[{backup}]",
        ", callbacks=[stop]": f"callbacks=[{backup}, stop]",
        ", callbacks=cbs": f"callbacks=[{backup}, *cbs]",
    }
    for tail, expected in cases.items():
        src = head + f"model.fit(tf.zeros([8, 2]), tf.zeros([8, 1]){tail})\n"
        result = convert_source(src, "ft.py", backend=key)
        assert result.status == "converted", result.error
        assert expected in result.code, (tail, result.code)
        assert any(c.rule == "fault-tolerance" for c in result.changes)
    plain = convert_source(head + "model.fit(tf.zeros([8, 2]), tf.zeros([8, 1]))\n", "ft.py", backend="tf-distribute")
    assert "BackupAndRestore" not in plain.code


# --------------------------------------------------- Keras 3 under tf.distribute
KERAS3_HEAD = ("import keras\n"
               "import numpy as np\n"
               "model = keras.Sequential([keras.Input((2,)), keras.layers.Dense(1)])\n"
               "model.compile(optimizer='sgd', loss='mse')\n")


def test_keras3_multi_worker_fit_is_converted_not_stopped_at_start_up():
    """import keras under tf-distribute: no SystemExit at job start; the
    strategy's reduce is wrapped under Keras >= 3 (its nested first batch
    fails MirroredStrategy too when the replicas' parts differ in size)."""
    src = KERAS3_HEAD + "model.fit(np.zeros((8, 2)), np.zeros((8, 1)))\n"
    result = convert_source(src, "k3.py", backend="tf-distribute")
    assert result.status == "converted", result.error
    assert "SystemExit" not in result.code
    assert ('if int(keras.__version__.split(".")[0]) >= 3:\n'
            "    strategy.reduce = reduce_for_keras3(strategy.reduce)\n") in result.code.replace("'", '"')
    # tf.keras: tf-keras selected before TensorFlow on workers; where tf.keras is Keras 3 still (one
    # host, or no tf-keras installed) the same reduce, keyed on tf.keras's version, never a stop
    tfk = convert_source(src.replace("import keras\n", "import tensorflow as tf\nkeras = tf.keras\n"), "tfk.py",
                         backend="tf-distribute")
    assert tfk.status == "converted" and "TF_USE_LEGACY_KERAS" in tfk.code and "SystemExit" not in tfk.code
    assert ('if int(getattr(tf.keras, "__version__", "2").split(".")[0]) >= 3:\n'
            "    strategy.reduce = reduce_for_keras3(strategy.reduce)\n") in tfk.code.replace("'", '"')
    # Horovod 0.28 cannot average Keras 3 gradients at all: its stop stays
    hvd = convert_source(src, "k3.py")
    assert "raise SystemExit(" in hvd.code and "reduce_for_keras3" not in hvd.code


class _Local:
    def __init__(self, rank):
        self.shape = type("Shape", (), {"rank": rank})()


class _Strategy:
    """Records what the wrapped reduce hands the strategy's own reduce."""

    def __init__(self):
        self.calls = []

    def reduce(self, op, value, axis):
        self.calls.append((op, value, axis))
        return ("reduced", value)

    def experimental_local_results(self, value):
        return (value,)


def _emitted_reduce(strategy):
    """The wrapper exactly as the converted script defines it."""
    import re
    import tensorflow as tf
    code = convert_source(KERAS3_HEAD + "model.fit(np.zeros((8, 2)), np.zeros((8, 1)))\n", "k3.py",
                          backend="tf-distribute").code
    definition = re.search(r"^def reduce_for_keras3\(reduce\):\n(?:    .*\n)+", code, re.M).group(0)
    namespace = {"tf": tf, "strategy": strategy, "os": os}
    exec(definition, namespace)
    return namespace["reduce_for_keras3"](strategy.reduce)


def test_keras3_reduce_changes_only_the_calls_multi_worker_strategy_rejects(monkeypatch):
    monkeypatch.setenv("TF_CONFIG", "{}")
    strategy = _Strategy()
    reduce = _emitted_reduce(strategy)
    scalar, vector = _Local(0), _Local(1)
    # fit's first batch (x, {"a": y}), reduced only to build the model from its
    # shapes: this worker's own part, no collective (the workers' parts of a
    # last, partial batch differ in size)
    out = reduce("MEAN", (vector, {"a": scalar}), axis=None)
    assert strategy.calls == []
    assert out == (vector, {"a": scalar})
    # a step's scalar metric "along axis 0": across the replicas only
    strategy.calls.clear()
    reduce("MEAN", scalar, axis=0)
    reduce("SUM", scalar, 0)
    assert strategy.calls == [("MEAN", scalar, None), ("SUM", scalar, None)]
    # everything the strategy accepts passes through as it is
    strategy.calls.clear()
    reduce("MEAN", vector, axis=0)
    reduce("SUM", scalar, axis=None)
    reduce("MEAN", 3.0, axis=0)
    assert strategy.calls == [("MEAN", vector, 0), ("SUM", scalar, None), ("MEAN", 3.0, 0)]


def test_keras3_reduce_under_local_devices_answers_only_the_first_batch(monkeypatch):
    """MirroredStrategy (no TF_CONFIG): the nested first batch is this
    replica's part (a mean of parts of 52 and 51 rows failed: AddN); every
    other call, scalars along axis 0 too, goes to the strategy as it is."""
    monkeypatch.delenv("TF_CONFIG", raising=False)
    strategy = _Strategy()
    reduce = _emitted_reduce(strategy)
    scalar, vector = _Local(0), _Local(1)
    assert reduce("MEAN", (vector, scalar), axis=None) == (vector, scalar) and strategy.calls == []
    reduce("MEAN", scalar, axis=0)
    reduce("SUM", vector, axis=None)
    assert strategy.calls == [("MEAN", scalar, 0), ("SUM", vector, None)]


def test_keras3_callbacks_that_write_get_a_path_per_worker():
    src = KERAS3_HEAD + (
        "cbs = [keras.callbacks.ModelCheckpoint('ckpt/{epoch}.keras'), keras.callbacks.TensorBoard(),\n"
        "       keras.callbacks.TensorBoard('tb', histogram_freq=1), keras.callbacks.EarlyStopping()]\n"
        "model.fit(np.zeros((8, 2)), np.zeros((8, 1)), callbacks=cbs)\n")
    result = convert_source(src, "k3.py", backend="tf-distribute")
    assert result.status == "converted", result.error
    assert ("cbs = [keras.callbacks.ModelCheckpoint(worker_path('ckpt/{epoch}.keras')), "
            "keras.callbacks.TensorBoard(log_dir=worker_path('logs')),\n"
            "       keras.callbacks.TensorBoard(worker_path('tb'), histogram_freq=1), "
            "keras.callbacks.EarlyStopping()]") in result.code
    assert sum(c.rule == "worker-writes" for c in result.changes) == 3


def test_keras3_backup_and_restore_is_refused_at_conversion_with_its_line():
    src = KERAS3_HEAD + ("backup = keras.callbacks.BackupAndRestore('bk')\n"
                         "model.fit(np.zeros((8, 2)), np.zeros((8, 1)), callbacks=[backup])\n")
    result = convert_source(src, "k3.py", backend="tf-distribute")
    assert result.status == "unsupported" and result.error_line == 5, (result.status, result.error_line)
    assert "BackupAndRestore under Keras 3" in result.error and "unable to lock file" in result.error
    fit_only = KERAS3_HEAD + "model.fit(np.zeros((8, 2)), np.zeros((8, 1)))\n"
    ft = convert_source(fit_only, "k3.py", backend=Options(backend="tf-distribute", fault_tolerant=True))
    assert ft.status == "unsupported" and ft.error_line == 5 and "BackupAndRestore under Keras 3" in ft.error
    # Horovod runs the callback on rank 0 only: unchanged there
    assert convert_source(src, "k3.py").status == "converted"


def test_flows_returned_by_a_helper_with_other_callers_are_not_divided_inside_it():
    """train, val = make_flows(...) called a second time for the test data:
    slicing inside the helper would hand rank 0 a share of the test data
    too, so the flow is warned, not divided."""
    src = (
        "import numpy as np\n"
        "import tensorflow as tf\n"
        "from tensorflow.keras.preprocessing.image import ImageDataGenerator\n"
        "def make_flows(x, y):\n"
        "    gen = ImageDataGenerator()\n"
        "    train = gen.flow(x, y, batch_size=8)\n"
        "    val = gen.flow(x, y, batch_size=8, shuffle=False)\n"
        "    return train, val\n"
        "x, y = np.zeros((64, 4, 4, 1)), np.zeros((64, 1))\n"
        "model = tf.keras.Sequential([tf.keras.layers.Flatten(), tf.keras.layers.Dense(1)])\n"
        "model.compile(optimizer='sgd', loss='mse')\n"
        "train, val = make_flows(x, y)\n"
        "model.fit(train, epochs=1)\n"
    )
    once = convert_source(src, "flows_once.py")
    assert "train = gen.flow(x[hvd.rank()::hvd.size()]" in once.code
    assert not once.warnings
    twice = convert_source(src + "test, _ = make_flows(x, y)\nprint(model.predict(test))\n", "flows_twice.py")
    assert "train = gen.flow(x, y, batch_size=8)" in twice.code
    assert any("cannot tell what train is" in w.message for w in twice.warnings)


def test_a_model_known_by_its_compile_is_followed_by_binding_not_by_name():
    """A model from a library tfdist has no table for is a model because a
    compile() with an optimizer and a loss is called on what the same
    binding holds -- not because some other object of the same name is
    compiled elsewhere (a builder's local ``model``)."""
    lib = (
        "import numpy as np\n"
        "import segmentation_models as sm\n"
        "x, y = np.zeros((64, 8, 8, 3)), np.zeros((64, 8, 8, 1))\n"
        "net = sm.Unet('resnet34', encoder_weights=None)\n"
        "net.compile(optimizer='adam', loss='binary_crossentropy')\n"
        "net.fit(x, y, batch_size=8)\n"
        "net.save('unet.h5')\n"
    )
    r = convert_source(lib, "lib_model.py")
    assert "if hvd.rank() == 0:\n    net.save('unet.h5')" in r.code, r.code
    r = convert_source(lib, "lib_model.py", backend="tf-distribute")
    assert "with strategy.scope():\n    net = sm.Unet('resnet34', encoder_weights=None)\n    net.compile(" in r.code, r.code
    # the same name compiled in a builder does not make a scikit-learn
    # wrapper a model; the wrapper is one by what it is bound to, whatever its name
    wrapper = (
        "import numpy as np\n"
        "from tensorflow.keras.wrappers.scikit_learn import KerasClassifier\n"
        "import tensorflow as tf\n"
        "def build():\n"
        "    m = tf.keras.Sequential([tf.keras.layers.Dense(1, activation='sigmoid')])\n"
        "    m.compile(optimizer=tf.keras.optimizers.SGD(0.01), loss='binary_crossentropy')\n"
        "    return m\n"
        "clf = KerasClassifier(build_fn=build, epochs=2, batch_size=16)\n"
        "clf.fit(np.zeros((64, 4)), np.zeros(64))\n"
    )
    r = convert_source(wrapper, "wrapper.py")
    assert r.status == "converted", r.error
    assert "tf.keras.optimizers.SGD(0.01 * hvd.size())" in r.code


@pytest.mark.parametrize("shape,script", [
    ("a factory's compiled model, its layers from a star import",
     "from keras.models import *\nfrom keras.layers import *\nimport numpy as np\n"
     "def make():\n    model = Sequential()\n    model.add(Dense(1))\n"
     "    model.compile(optimizer='adam', loss='mse')\n    return model\n"
     "net = make()\nnet.fit(np.zeros((64, 4)), np.zeros((64, 1)))\n"),
    ("a builder handed in as a parameter",
     "import numpy as np\nimport tensorflow as tf\n"
     "def classifier():\n    m = tf.keras.models.Model(*io())\n"
     "    m.compile(optimizer='adam', loss='mse')\n    return m\n"
     "def run(model_func, x, y):\n    model = model_func()\n    model.fit(x, y, epochs=1)\n"
     "run(classifier, np.zeros((64, 4)), np.zeros((64, 1)))\n"),
    ("builders taken in turn from a list passed in",
     "import numpy as np\nimport tensorflow as tf\n"
     "def small():\n    m = tf.keras.models.Model(*io())\n"
     "    m.compile(optimizer='adam', loss='mse')\n    return m\n"
     "def train_all(builders, x, y):\n    for build in builders:\n        model = build()\n"
     "        model.fit(x, y, epochs=1)\n"
     "train_all([small], np.zeros((64, 4)), np.zeros((64, 1)))\n"),
    ("models in a tuple unpacked from a parameter",
     "import numpy as np\nimport tensorflow as tf\n"
     "def train(models, x):\n    gen, disc = models\n"
     "    for step in range(100):\n        disc.train_on_batch(x[np.random.randint(0, len(x), 8)], np.ones((8, 1)))\n"
     "def build():\n    disc = tf.keras.models.Model(*io())\n"
     "    disc.compile(optimizer=tf.keras.optimizers.Adam(1e-3), loss='mse')\n"
     "    models = (None, disc)\n    return models\n"
     "models = build()\ntrain(models, np.zeros((64, 4)))\n"),
])
def test_a_model_is_followed_through_what_holds_it(shape, script):
    """Objects followed by what they are bound to -- a factory's return, a
    function passed in, an element of a tuple passed in -- not by name."""
    r = convert_source(script, "held.py")
    assert r.status == "converted", (shape, r.error)
    assert "hvd.DistributedOptimizer(" in r.code or "hvd_keras.DistributedOptimizer(" in r.code, (shape, r.code)
    r = convert_source(script, "held.py", backend="tf-distribute")
    assert r.status == "converted" and "with strategy.scope():" in r.code, (shape, r.error, r.code)
    assert not [w for w in r.warnings if "cannot find where" in w.message], (shape, r.warnings)


_AUTOENCODER = '''import numpy as np
import tensorflow as tf

(x_train, _), _ = tf.keras.datasets.mnist.load_data()
{made}
model = tf.keras.Sequential([tf.keras.layers.Flatten(), tf.keras.layers.Dense(4)])
model.compile(optimizer="adam", loss="mse")
model.fit(inputs, epochs=1, batch_size=32)
'''


@pytest.mark.parametrize("made,array", [
    # a helper of the file returning arrays
    ("def preprocess(imgs):\n    imgs = imgs.astype('float32') / 255.0\n    return np.expand_dims(imgs, -1)\n"
     "inputs = preprocess(x_train)", True),
    # an array method's result, and a TensorFlow op's eager value
    ("inputs = x_train.transpose([0, 2, 1])", True),
    ("inputs = tf.image.resize(x_train[..., None], (32, 32)).numpy()", True),
    # a Keras layer called eagerly on an array; rows of a scikit-learn sample generator
    ("norm = tf.keras.layers.Normalization()\nnorm.adapt(x_train)\ninputs = norm(x_train)", True),
    ("from sklearn import datasets\ninputs = datasets.make_moons(300, noise=0.05)[0].astype('float32')", True),
    ("from sklearn.datasets import make_blobs\ninputs, labels = make_blobs(300)", True),
    # TensorFlow ops keeping the rows (one_hot with its default axis)
    ("inputs = tf.cast(tf.one_hot(x_train[:, 0, 0], 256), tf.float32)", True),
    ("inputs = tf.one_hot(x_train[:, 0, 0], 256, axis=0)", False),
    # scikit-learn transformers and scaling functions: one row per input row
    ("from sklearn.preprocessing import StandardScaler\nscaler = StandardScaler()\nflat = x_train.reshape(-1, 784)\n"
     "scaler.fit(flat)\ninputs = scaler.transform(flat)", True),
    ("from sklearn.decomposition import PCA\ninputs = PCA(32).fit_transform(x_train.reshape(-1, 784))", True),
    ("from sklearn.preprocessing import minmax_scale\ninputs = minmax_scale(x_train.reshape(-1, 784))", True),
    # an encoder giving a sparse matrix by default, and a transformer of the user's own: not known
    ("from sklearn.preprocessing import OneHotEncoder\ninputs = OneHotEncoder().fit_transform(x_train[:, :, 0])", False),
    ("class Scaler:\n    def transform(self, x):\n        return x[:1]\ninputs = Scaler().transform(x_train)", False),
    # a layer of the user's own class is not known to keep the rows
    ("class Pick(tf.keras.layers.Layer):\n    def call(self, x):\n        return x[0]\ninputs = Pick()(x_train)", False),
    # a generator function is no array: not sliced
    ("def batches(imgs):\n    for i in range(0, len(imgs), 32):\n        yield imgs[i:i + 32]\n"
     "inputs = batches(x_train)", False),
])
def test_an_input_given_to_fit_alone_is_sliced_when_it_is_an_array(made, array):
    result = convert_source(_AUTOENCODER.format(made=made).encode(), "ae.py")
    assert result.status == "converted", result.error
    sliced = [c for c in result.changes if c.rule == "data-division" and "inputs sliced by rank" in c.message]
    assert bool(sliced) == array, [(c.rule, c.message) for c in result.changes + result.warnings]
    if array:
        assert "model.fit(inputs[hvd.rank()::hvd.size()][:len(inputs) // hvd.size()], epochs=1" in result.data.decode()
        assert not [w for w in result.warnings if w.rule == "data-division"]


def test_rows_made_a_list_where_fit_takes_them_are_sliced_before_tolist():
    # a notebook hands a DataFrame's rows to Keras as lists: the rows are sliced, then listed
    src = b'''import pandas as pd
import tensorflow as tf

data = pd.read_csv("mushrooms.csv")
labels = data.pop("class")
model = tf.keras.Sequential([tf.keras.layers.Dense(1, activation="sigmoid")])
model.compile(loss="binary_crossentropy", optimizer="adam")
model.fit(data.values.tolist(), labels.values.tolist())
'''
    result = convert_source(src, "mushrooms.py")
    assert result.status == "converted", result.error
    assert not result.warnings, [w.message for w in result.warnings]
    assert ("model.fit(data.values[hvd.rank()::hvd.size()][:len(data.values) // hvd.size()].tolist(), "
            "labels.values[hvd.rank()::hvd.size()][:len(labels.values) // hvd.size()].tolist()") in result.data.decode()


def test_a_scikit_learn_wrappers_fit_gets_no_keras_fit_arguments_under_tf_distribute():
    # KerasClassifier.fit hands its keyword arguments to the model's fit(),
    # over its constructor's batch_size=50: adding fit()'s per-replica default
    # batch there would change the batch; the wrapper is warned instead
    src = b'''import numpy as np
from tensorflow.keras import layers, models, optimizers
from tensorflow.keras.wrappers.scikit_learn import KerasClassifier


def build():
    model = models.Sequential([layers.Dense(2, activation="softmax")])
    model.compile(optimizer=optimizers.Adam(0.001), loss="sparse_categorical_crossentropy")
    return model


clf = KerasClassifier(build_fn=build, epochs=3, batch_size=50, verbose=1)
clf.fit(np.ones((100, 4)), np.zeros(100))
'''
    result = convert_source(src, "wrapper.py", backend="tf-distribute")
    assert result.status == "converted", result.error
    text = result.data.decode()
    assert "clf.fit(np.ones((100, 4)), np.zeros(100))\n" in text
    assert "clf = KerasClassifier(build_fn=build, epochs=3, batch_size=50, verbose=1)\n" in text
    assert [w for w in result.warnings if "KerasClassifier trains Keras models itself" in w.message]


_FLAGGED_GENERATOR = '''import numpy as np
import tensorflow as tf

x = np.random.rand(256, 4).astype("float32")
y = np.random.rand(256, 1).astype("float32")


def generator(x, y, shuffle=SHUFFLE_DEFAULT, batch_size=16):
    i = 0
    while True:
        if shuffle:
            rows = np.random.randint(0, len(x), size=batch_size)
        else:
            rows = np.arange(i, i + batch_size) % len(x)
            i += batch_size
        yield x[rows], y[rows]


model = tf.keras.Sequential([tf.keras.layers.Dense(1)])
model.compile(optimizer="sgd", loss="mse")
model.fit(MAKE, steps_per_epoch=16, epochs=2)
'''
_SEEDED = "each rank draws its own stream of batches (NumPy seeded by rank)"


@pytest.mark.parametrize("default,make,draws", [
    ("False", "generator(x, y, shuffle=True)", True),    # the flag set: random rows on every call
    ("False", "generator(x, y)", False),                  # the default: rows in order, no draw
    ("True", "generator(x, y)", True),
    ("True", "generator(x, y, False)", False),            # positional
    ("False", "generator(x, y, shuffle=x.any())", None),  # not a literal: neither a random stream nor certain
])
def test_a_generator_drawing_under_its_flag_draws_only_where_the_call_sets_it(default, make, draws):
    """Re-seeding NumPy per rank divides the work only for a generator that
    draws on every call; one walking its arrays in order would hand every
    rank the same batches. The flag the call passes decides; a flag tfdist
    cannot read falls back to every rank keeping every size-th batch."""
    result = convert_source(_FLAGGED_GENERATOR.replace("SHUFFLE_DEFAULT", default).replace("MAKE", make), "gen.py")
    assert result.status == "converted", result.error
    assert (_SEEDED in result.code) == bool(draws), result.code
    assert ("rank_share(generator(" in result.code) == (not draws), result.code
    assert not [w for w in result.warnings if w.rule == "data-division"], result.warnings


_UNCALLED_TRAINER = '''import numpy as np
import tensorflow as tf


def train(model, train_gen):
    model.compile(optimizer="sgd", loss="mse")
    return model.fit(train_gen, steps_per_epoch=10, epochs=2)
'''


@pytest.mark.parametrize("backend", ["horovod", "tf-distribute"])
def test_an_input_parameter_no_call_binds_is_warned_as_unknown_naming_the_function(backend):
    """fit() in a function nothing in the file calls: what its input
    parameter holds cannot be read; the warning says why."""
    result = convert_source(_UNCALLED_TRAINER, "trainer.py", backend=backend)
    assert result.status == "converted", result.error
    assert [w for w in result.warnings if w.rule == "data-division"
            and "(train_gen is a parameter of train(), which this file never calls)" in w.message], result.warnings


@pytest.mark.parametrize("backend", ["horovod", "tf-distribute"])
@pytest.mark.parametrize("setting,refused", [
    ('os.environ["KERAS_BACKEND"] = "torch"', True),
    ('os.environ.setdefault("KERAS_BACKEND", "jax")', True),
    ('keras.config.set_backend("jax")', True),
    ('os.environ["KERAS_BACKEND"] = "tensorflow"', False),
    ('os.environ["TF_CPP_MIN_LOG_LEVEL"] = "2"', False),
])
def test_keras_on_another_backend_is_refused_on_both_engines(backend, setting, refused):
    """Keras 3 on JAX or PyTorch trains with that framework: neither engine
    distributes it (a conversion would run one unsynchronised copy per
    process); the TensorFlow backend converts as usual."""
    source = ("import os\nimport keras\nimport numpy as np\n" + setting + "\n"
              "x = np.random.rand(64, 4).astype('float32')\ny = np.random.rand(64, 1).astype('float32')\n"
              "model = keras.Sequential([keras.layers.Dense(1)])\nmodel.compile(optimizer='sgd', loss='mse')\n"
              "model.fit(x, y, epochs=1)\n")
    result = convert_source(source, "backend.py", backend=backend)
    if refused:
        assert result.status == "unsupported" and "Keras runs on its" in result.error and result.error_line == 4, result.error
    else:
        assert result.status == "converted", result.error


_AUGMENT_OR_NOT = '''import numpy as np
import tensorflow as tf
from tensorflow import keras

x_train = np.random.rand(256, 8, 8, 3).astype("float32")
y_train = np.random.randint(0, 2, 256)
with_datagen = True


def run(model, datagen=None, batch_size=32):
    if datagen is None:
        return model.fit(x_train, y_train, batch_size=batch_size, epochs=2)
    datagen.fit(x_train)
    return model.fit(datagen.flow(x_train, y_train, batch_size=batch_size),
                     steps_per_epoch=len(x_train) // batch_size, epochs=2)


if with_datagen:
    datagen = keras.preprocessing.image.ImageDataGenerator(rotation_range=10.)
else:
    datagen = None
model = keras.Sequential([keras.layers.Flatten(), keras.layers.Dense(2)])
model.compile(optimizer="adam", loss="sparse_categorical_crossentropy")
run(model, datagen=datagen)
'''


@pytest.mark.parametrize("backend,flow", [
    ("horovod", "datagen.flow(x_train[hvd.rank()::hvd.size()][:len(x_train) // hvd.size()]"),
    ("tf-distribute", "sequence_dataset(datagen.flow(x_train, y_train, batch_size=batch_size))")])
def test_a_flow_of_a_generator_handed_in_or_none_is_an_image_flow(backend, flow):
    """``datagen`` is an ImageDataGenerator or None (bound in an if/else,
    handed to run() whose default is None): its flow() can only run on the
    generator, so the flow is read as one -- on each engine as it reads flows."""
    result = convert_source(_AUGMENT_OR_NOT, "augment.py", backend=backend)
    assert result.status == "converted", result.error
    assert flow in result.code, result.code
    assert not [w for w in result.warnings if w.rule == "data-division"], result.warnings


def test_a_module_the_script_imports_after_tensorflow_is_imported_before_the_start_up_code():
    """keras-io's text classification imports os after keras; the start-up code,
    placed after the keras import, read the script's os before it was bound
    (NameError on every worker). It is imported again with tfdist's own. (Text blocks
    between the imports no longer end them -- test_leading_strings.py; a statement does.)"""
    src = ('"""Doc."""\n\n"""\n## Setup\n"""\n\nimport tensorflow as tf\nimport keras\n\nSEED = 1\n\n'
           "import os\nimport numpy as np\n\n"
           "model = keras.Sequential([keras.Input((2,)), keras.layers.Dense(1)])\n"
           "model.compile(optimizer='adam', loss='mse')\n"
           "model.fit(np.zeros((8, 2)), np.zeros((8, 1)))\n")
    result = convert_source(src, "late_os.py", backend="tf-distribute")
    assert result.status == "converted", result.error
    code = result.code
    assert code.index("import os\n") < code.index("os.environ") < code.rindex("import os\n")
    compile(code, "late_os.py", "exec")
    # a script importing os first keeps its one import
    early = convert_source(src.replace("import keras\n", "import os\nimport keras\n", 1).replace(
        "\nimport os\nimport numpy", "\nimport numpy"), "early.py", backend="tf-distribute").code
    assert early.count("import os\n") == 1
