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
