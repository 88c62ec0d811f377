"""Dataset helpers of another module, set up at their call: a dict of
settings whose key sets the batch, a flag that turns the helper's shuffle
off, a step count returned with the dataset."""
import pytest

from tfdist.api import convert_file

PIPELINE = '''import numpy as np
import tensorflow as tf


def get_dataset(config, shuffle=True):
    x = np.load(config["path"])
    dataset = tf.data.Dataset.from_tensor_slices((x[:, :-1], x[:, -1]))
    if shuffle == True:
        dataset = dataset.shuffle(buffer_size=len(x))
    dataset = dataset.batch(config["batch_size"], drop_remainder=True).repeat()
    return dataset, STEPS
'''

TRAIN = '''import tensorflow as tf
from pipeline import get_dataset

config = {"path": "rows.npy", "batch_size": 32}
dataset, steps_per_epoch = get_dataset(config, shuffle=SHUFFLE)
EXTRA
model = tf.keras.Sequential([tf.keras.layers.Dense(2)])
model.compile(optimizer=tf.keras.optimizers.SGD(0.1), loss="mse")
model.fit(dataset, steps_per_epoch=steps_per_epoch, epochs=2)
'''


def _convert(tmp_path, backend, shuffle="False", extra="", steps='len(x) // config["batch_size"]'):
    (tmp_path / "pipeline.py").write_text(PIPELINE.replace("STEPS", steps))
    script = tmp_path / "train.py"
    script.write_text(TRAIN.replace("SHUFFLE", shuffle).replace("EXTRA", extra))
    result = convert_file(script, backend=backend)
    assert result.status == "converted", result.error
    return result.code, [w.message for w in result.warnings]


def test_the_settings_batch_is_made_global_where_it_is_written_and_its_count_is_not_divided_again(tmp_path):
    out, warnings = _convert(tmp_path, "tf-distribute")
    assert not warnings
    assert 'config = {"path": "rows.npy", "batch_size": 32 * strategy.num_replicas_in_sync}' in out
    assert "steps_per_epoch=steps_per_epoch," in out


def test_a_count_not_computed_from_the_batch_is_divided(tmp_path):
    out, warnings = _convert(tmp_path, "tf-distribute", steps="100")
    assert not warnings
    assert "steps_per_epoch=max(1, steps_per_epoch // strategy.num_replicas_in_sync)" in out


@pytest.mark.parametrize("extra", [
    'print("batch", config["batch_size"])',       # the key read here too: it is not the helper's alone
    "config['batch_size'] = 64",                   # changed here
    "print(config)",                               # handed on whole
])
def test_a_settings_batch_used_elsewhere_is_left_with_the_edit_named(tmp_path, extra):
    out, warnings = _convert(tmp_path, "tf-distribute", extra=extra)
    assert '"batch_size": 32}' in out
    assert any("batches by dataset.batch(config[\"batch_size\"]" in w and "pipeline.py, line 10" in w
               for w in warnings), warnings


@pytest.mark.parametrize("shuffle, warned", [("False", False), ("True", True), ("flag", True)])
@pytest.mark.parametrize("backend", ["horovod", "tf-distribute"])
def test_a_shuffle_under_the_helpers_flag_counts_where_the_call_sets_it(tmp_path, shuffle, warned, backend):
    out, warnings = _convert(tmp_path, backend, shuffle=shuffle)
    shuffle_warnings = [w for w in warnings if "shuffles" in w]
    assert bool(shuffle_warnings) == warned, warnings


WINDOWS = '''import tensorflow as tf


def windowed_dataset(series, window_size, batch_size, shuffle_buffer):
    dataset = tf.data.Dataset.from_tensor_slices(series)
    dataset = dataset.window(window_size + 1, shift=1, drop_remainder=True)
    dataset = dataset.flat_map(lambda window: window.batch(window_size + 1))
    dataset = dataset.shuffle(shuffle_buffer).map(lambda window: (window[:-1], window[-1]))
    return dataset.batch(batch_size).prefetch(1)


def sequences(text_as_int, seq_length, batch_size):
    chunks = tf.data.Dataset.from_tensor_slices(text_as_int).batch(seq_length + 1, drop_remainder=True)
    return chunks.map(lambda c: (c[:-1], c[1:])).shuffle(1000, seed=3).batch(batch_size, drop_remainder=True)


def rows(features, labels, batch_size):
    return tf.data.Dataset.from_tensor_slices((features, labels)).shuffle(1000, seed=3).batch(batch_size)
'''

SERIES = '''import numpy as np
import tensorflow as tf
from windows import CALL

data = np.load("series.npy")
SEED
train_set = CALL_EXPR
model = tf.keras.Sequential([tf.keras.layers.Dense(1)])
model.compile(optimizer=tf.keras.optimizers.SGD(0.01), loss="mse")
model.fit(train_set, epochs=2)
'''


def _series(tmp_path, call, expr, seed="tf.random.set_seed(51)", backend="horovod"):
    (tmp_path / "windows.py").write_text(WINDOWS)
    script = tmp_path / "train.py"
    script.write_text(SERIES.replace("CALL_EXPR", expr).replace("CALL", call).replace("SEED", seed))
    result = convert_file(script, backend=backend)
    assert result.status == "converted", result.error
    return result.code, [w.message for w in result.warnings]


ROUNDS = ".window(hvd.size(), drop_remainder=True).flat_map(lambda *batches: tf.data.Dataset.zip("
KNOWN = ".apply(lambda ds: ds.shard(hvd.size(), hvd.rank()).take(ds.cardinality() // hvd.size()))"


@pytest.mark.parametrize("call, expr, shard", [
    # windows of a series: batches of an unknown number, shared out in whole rounds at the call
    ("windowed_dataset", "windowed_dataset(data, 20, 32, 1000)", ROUNDS),
    # chunks batched again (drop_remainder: a known number of batches)
    ("sequences", "sequences(data, 100, 64)", KNOWN),
])
def test_rows_are_not_sliced_before_a_helper_makes_samples_of_neighbouring_rows(tmp_path, call, expr, shard):
    out, warnings = _series(tmp_path, call, expr)
    assert "data[hvd.rank()" not in out
    assert expr + shard in out
    assert not warnings, warnings


def test_rows_a_helper_batches_once_are_sliced_where_they_are_handed_over(tmp_path):
    out, warnings = _series(tmp_path, "rows", "rows(data[:, :-1], data[:, -1], 32)")
    assert "data[:, :-1][hvd.rank()::hvd.size()]" in out
    assert not warnings, warnings


@pytest.mark.parametrize("backend", ["horovod", "tf-distribute"])
def test_an_unseeded_helper_shuffle_is_alike_on_every_rank_after_the_global_seed(tmp_path, backend):
    _, warnings = _series(tmp_path, "windowed_dataset", "windowed_dataset(data, 20, 32, 1000)", backend=backend)
    assert not [w for w in warnings if "shuffle" in w], warnings
    _, warnings = _series(tmp_path, "windowed_dataset", "windowed_dataset(data, 20, 32, 1000)", seed="",
                          backend=backend)
    assert [w for w in warnings if "shuffle" in w], warnings


DIGITS = '''import numpy as np


class Digits:
    @classmethod
    def get_data(cls, scale=1.0, shuffle=True, seed=None):
        if seed is not False:
            np.random.seed(seed)
        x_data = np.load("digits.npy")
        if shuffle:
            p = np.random.permutation(len(x_data))
            x_data = x_data[p]
        n = int(scale * len(x_data))
        x_data = x_data[:n]
        x_data = x_data.astype("float32") / 255.0
        return x_data, x_data[:10]
'''

VAE = '''import tensorflow as tf
from datasets import Digits

x_data, _ = Digits.get_data(CALL)
vae = tf.keras.Sequential([tf.keras.layers.Dense(2)])
vae.compile(optimizer=tf.keras.optimizers.Adam(1e-3))
vae.fit(x_data, epochs=2, batch_size=64)
'''


@pytest.mark.parametrize("backend", ["horovod", "tf-distribute"])
@pytest.mark.parametrize("call, seeded", [("scale=0.1", True), ("seed=None", True), ("seed=False", True),
                                          ("seed=42", False), ("0.1, True, 42", False)])
def test_arrays_of_a_class_method_of_a_package_module_are_followed_and_seeded_alike(tmp_path, backend, call, seeded):
    """fit(x) alone: x must be known to be an array (a generator or dataset is divided otherwise); the class
    comes through a package that re-exports it; its seed parameter, left None, seeds from the OS."""
    (tmp_path / "datasets").mkdir()
    (tmp_path / "datasets" / "__init__.py").write_text("from datasets.Digits import Digits\n")
    (tmp_path / "datasets" / "Digits.py").write_text(DIGITS)
    script = tmp_path / "vae.py"
    script.write_text(VAE.replace("CALL", call))
    result = convert_file(script, backend=backend)
    assert result.status == "converted", result.error
    assert not result.warnings, [w.message for w in result.warnings]
    # left None (or handed None): the shared seed given there; False (no seeding at all): NumPy seeded before
    expected = {"scale=0.1": "Digits.get_data(scale=0.1, seed=1234)", "seed=None": "Digits.get_data(seed=1234)",
                "seed=False": "np.random.seed(1234)\nx_data, _ = Digits.get_data(seed=False)"}
    if seeded:
        assert expected[call] in result.code
    else:
        assert "1234" not in result.code
