"""--warmup-epochs on 2 Horovod ranks: the learning rate the optimizer really
uses at each step ramps from the rate as written to the scaled one over the
first epoch, then stays there (Horovod's callback for linear scaling, the
emitted callback for sqrt)."""
import re

import pytest

from tfdist.api import convert_source

from conftest import cli_env, run_tfdist

SCRIPT = b'''import os

import numpy as np
import tensorflow as tf

tf.keras.utils.set_random_seed(0)
x = np.random.randn(256, 4).astype("float32")
y = (x.sum(axis=1, keepdims=True) > 0).astype("float32")
ds = tf.data.Dataset.from_tensor_slices((x, y)).batch(16)

model = tf.keras.Sequential([tf.keras.layers.Dense(1, activation="sigmoid", input_shape=(4,))])
model.compile(optimizer=tf.keras.optimizers.SGD(learning_rate=0.1), loss="binary_crossentropy")


def show(batch, logs):
    rate = float(model.optimizer.learning_rate.numpy())
    with open(f"lr-{os.environ.get('HOROVOD_RANK', '0')}.txt", "a") as out:
        out.write(f"{rate}\\n")


model.fit(ds, epochs=2, verbose=0, callbacks=[tf.keras.callbacks.LambdaCallback(on_train_batch_begin=show)])
'''
STEPS_PER_EPOCH = 256 // 2 // 16  # per rank, after sharding


@pytest.mark.parametrize("key,scaled", [("horovod+warmup-1", 0.2), ("horovod+lr-sqrt+warmup-1", 0.1 * 2 ** 0.5)])
def test_learning_rate_ramps_to_the_scaled_rate_on_2_ranks(runtime_python, tmp_path, key, scaled):
    result = convert_source(SCRIPT, "train.py", backend=key)
    assert result.status == "converted", result.error
    assert result.warnings == []
    (tmp_path / "train.py").write_bytes(result.data)
    run = run_tfdist(runtime_python, ["run", "-np", "2", "--timeout", "120", "train.py"], cwd=tmp_path, env=cli_env())
    assert run.returncode == 0, run
    path = tmp_path / "lr-0.txt"  # the converter keeps the file write on rank 0
    assert path.exists(), run
    lrs = [float(v) for v in path.read_text().split()]
    assert len(lrs) == 2 * STEPS_PER_EPOCH
    first, second = lrs[:STEPS_PER_EPOCH + 1], lrs[STEPS_PER_EPOCH:]
    step = (scaled - 0.1) / STEPS_PER_EPOCH
    # starts at the single-process rate (Horovod's callback is one step in)
    assert 0.1 - 1e-6 <= first[0] <= 0.1 + step + 1e-6, lrs
    # rises by an equal step each batch during the first epoch ...
    for a, b in zip(first, first[1:]):
        assert b - a == pytest.approx(step, rel=1e-3, abs=1e-6) or b == pytest.approx(scaled, rel=1e-5), lrs
    # ... and holds the scaled rate from the end of the warmup on
    assert all(v == pytest.approx(scaled, rel=1e-5) for v in second), lrs
