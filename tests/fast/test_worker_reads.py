"""Files read back under tf.distribute, where every worker saves (rule
worker-reads): a path the script saves to itself is read by each worker
from its own copy; what ModelCheckpoint writes (on the chief only) is
warned about, with the line of the callback; loads of files the script
never writes are wrapped too, and read as given at run time."""
from __future__ import annotations

import pytest

from tfdist.api import convert_source

HEAD = '''import numpy as np
import tensorflow as tf

x = np.random.rand(64, 4).astype("float32")
y = x.sum(axis=1)
model = tf.keras.Sequential([tf.keras.Input((4,)), tf.keras.layers.Dense(1)])
model.compile(optimizer="sgd", loss="mse")
'''


def _tfd(src):
    result = convert_source(src.encode(), "reads.py", backend="tf-distribute")
    assert result.status == "converted", result.error
    return result, result.data.decode()


@pytest.mark.parametrize("save,load,read", [
    ('model.save_weights("w.weights.h5")', 'model.load_weights("w.weights.h5")',
     'model.load_weights(worker_path("w.weights.h5", reading=True))'),
    ('ckpt = tf.train.Checkpoint(model=model)\nsaved = ckpt.save("ckpt/run")', "ckpt.restore(saved)",
     "ckpt.restore(worker_path(saved, reading=True))"),
    ('model.save("m.keras")', 'model = tf.keras.models.load_model("m.keras")',
     'tf.keras.models.load_model(worker_path("m.keras", reading=True))'),
], ids=["weights", "checkpoint", "saved model"])
def test_what_the_script_saves_is_read_back_from_each_workers_own_copy(save, load, read):
    result, text = _tfd(HEAD + "model.fit(x, y, batch_size=16, epochs=1)\n" + save + "\n" + load + "\n")
    assert read in text, text
    assert not result.warnings


def test_a_checkpoint_callbacks_file_read_back_is_warned_with_the_callbacks_line():
    src = HEAD + ('best = "best.keras"\n'
                  'model.fit(x, y, batch_size=16, epochs=2, callbacks=[tf.keras.callbacks.ModelCheckpoint(best)])\n'
                  'model = tf.keras.models.load_model(best)\n')
    result, text = _tfd(src)
    assert "tf.keras.models.load_model(best)" in text
    warned = [w for w in result.warnings if w.rule == "worker-writes"]
    assert len(warned) == 1 and "(line 9)" in warned[0].message and warned[0].line == 10, warned
