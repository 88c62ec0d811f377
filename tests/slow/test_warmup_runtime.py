"""--warmup-epochs on 2 processes: the learning rate the optimizer really
uses at each step ramps from the rate as written to the scaled one over the
first epoch, then stays there or follows the script's own schedule.

Keras fit (Horovod's callback for linear scaling, the emitted callback for
sqrt, a schedule wrapped when the rate is the script's schedule), tape
loops (eager; traced around a schedule; on 2 tf.distribute workers) and a
TF1 Session given --steps-per-epoch. The rate is read from fit's optimizer
or measured from the update itself."""
import os
import re
import subprocess

import pytest

from tfdist.api import convert_source
from tfdist.options import Options

from conftest import cli_env, missing_stack, run_tfdist

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


@pytest.mark.parametrize("key,scaled", [
    (Options(backend="horovod", warmup_epochs=1), 0.2),
    # the same ramp to another target (the sqrt rule's factor is unit-tested in the fast tier)
    pytest.param(Options(backend="horovod", lr_scaling="sqrt", warmup_epochs=1), 0.1 * 2 ** 0.5, marks=pytest.mark.extended)])
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


# --------------------------------------------------------- loops that apply steps
# The rate each step really used, measured from the update itself: plain SGD
# moves a variable by rate x (averaged) gradient.
TAPE = b'''import os

import numpy as np
import tensorflow as tf

tf.keras.utils.set_random_seed(0)
x = np.random.randn(256, 4).astype("float32")
y = (x.sum(axis=1, keepdims=True) > 0).astype("float32")
ds = tf.data.Dataset.from_tensor_slices((x, y)).batch(16)
w = tf.Variable(tf.zeros([4, 1]))
rate = RATE
optimizer = tf.keras.optimizers.SGD(learning_rate=rate)


DECORATOR
def train_step(xb, yb):
    with tf.GradientTape() as tape:
        loss = tf.reduce_mean(tf.nn.sigmoid_cross_entropy_with_logits(labels=yb, logits=tf.matmul(xb, w)))
    grads = tape.gradient(loss, [w])
    optimizer.apply_gradients(zip(grads, [w]))
    return grads[0]


for epoch in range(2):
    for xb, yb in ds:
        before = w.numpy()
        grad = train_step(xb, yb).numpy()
        used = float(np.linalg.norm(before - w.numpy()) / np.linalg.norm(grad))
        with open(f"lr-{os.environ.get('HOROVOD_RANK', '0')}.txt", "a") as out:
            out.write(f"{used}\\n")
'''
TAPE_STEPS = 256 // 2 // 16  # per rank and epoch, after sharding


def _rates(runtime_python, tmp_path, source: bytes, options: Options, count: int) -> list:
    result = convert_source(source, "train.py", backend=options)
    assert result.status == "converted", result.error
    assert result.warnings == [], [w.message for w in result.warnings]
    (tmp_path / "train.py").write_bytes(result.data)
    run = run_tfdist(runtime_python, ["run", "-np", "2", "--timeout", "180", "train.py"], cwd=tmp_path, env=cli_env())
    assert run.returncode == 0, run
    rates = [float(v) for v in (tmp_path / "lr-0.txt").read_text().split()]
    assert len(rates) == count, rates
    return rates


@pytest.mark.parametrize("decorator,rate,expected", [
    # eager steps, a plain rate: 0.1 x (1 + step / 8) for 8 steps, then 0.2
    ("", "0.1", lambda s: 0.2 * (0.5 + 0.5 * min(s / TAPE_STEPS, 1.0))),
    # a traced step around the script's own schedule (decay_steps 16 -> 8 per rank):
    # the warmup multiplies the decayed, scaled rate
    ("@tf.function", "tf.keras.optimizers.schedules.ExponentialDecay(0.1, decay_steps=16, decay_rate=0.5)",
     lambda s: 0.2 * 0.5 ** (s / 8) * (0.5 + 0.5 * min(s / TAPE_STEPS, 1.0))),
])
def test_a_tape_loop_warms_up_over_its_first_epoch_on_2_ranks(runtime_python, tmp_path, decorator, rate, expected):
    source = TAPE.replace(b"DECORATOR", decorator.encode()).replace(b"RATE", rate.encode())
    rates = _rates(runtime_python, tmp_path, source, Options(backend="horovod", warmup_epochs=1), 2 * TAPE_STEPS)
    for step, used in enumerate(rates):
        assert used == pytest.approx(expected(step), rel=2e-3), (step, rates)


TF1 = b'''import os

import numpy as np
import tensorflow.compat.v1 as tf

tf.disable_v2_behavior()
x = np.random.RandomState(0).randn(256, 4).astype("float32")
y = (x.sum(axis=1, keepdims=True) > 0).astype("float32")
ds = tf.data.Dataset.from_tensor_slices((x, y)).batch(16).repeat()
xb, yb = tf.data.make_one_shot_iterator(ds).get_next()
v = tf.get_variable("v", [4, 1], initializer=tf.zeros_initializer())
# a term whose gradient is 1 on every rank: the probe moves by the rate itself
probe = tf.get_variable("probe", [], initializer=tf.zeros_initializer())
loss = tf.reduce_mean(tf.nn.sigmoid_cross_entropy_with_logits(labels=yb, logits=tf.matmul(xb, v))) + probe
global_step = tf.train.get_or_create_global_step()
train_op = tf.train.GradientDescentOptimizer(0.1).minimize(loss, global_step=global_step)
with tf.Session() as sess:
    sess.run(tf.global_variables_initializer())
    for step in range(32):
        before = sess.run(probe)
        sess.run(train_op)
        used = float(before - sess.run(probe))
        with open(f"lr-{os.environ.get('HOROVOD_RANK', '0')}.txt", "a") as out:
            out.write(f"{used}\\n")
'''


def test_a_tf1_session_warms_up_over_the_epoch_given_on_2_ranks(runtime_python, tmp_path):
    """16 original steps per epoch (256 rows, batches of 16): 8 per rank."""
    rates = _rates(runtime_python, tmp_path, TF1, Options(backend="horovod", warmup_epochs=1, steps_per_epoch=16), 16)
    for step, used in enumerate(rates):
        assert used == pytest.approx(0.2 * (0.5 + 0.5 * min(step / 8, 1.0)), rel=2e-3), (step, rates)


FIT_SCHEDULE = b'''import os

import numpy as np
import tensorflow as tf

tf.keras.utils.set_random_seed(0)
x = np.random.randn(256, 4).astype("float32")
y = (x.sum(axis=1, keepdims=True) > 0).astype("float32")
ds = tf.data.Dataset.from_tensor_slices((x, y)).batch(16)

schedule = tf.keras.optimizers.schedules.ExponentialDecay(0.1, decay_steps=16, decay_rate=0.5)
model = tf.keras.Sequential([tf.keras.layers.Dense(1, activation="sigmoid", input_shape=(4,))])
model.compile(optimizer=tf.keras.optimizers.SGD(learning_rate=schedule), loss="binary_crossentropy")


def show(batch, logs):
    # the rate the step that just ran used (Keras 2 keeps it in a variable)
    rate = float(model.optimizer.learning_rate.numpy())
    with open(f"lr-{os.environ.get('HOROVOD_RANK', '0')}.txt", "a") as out:
        out.write(f"{rate}\\n")


model.fit(ds, epochs=2, verbose=0, callbacks=[tf.keras.callbacks.LambdaCallback(on_train_batch_end=show)])
model.save("model.keras")
'''


def test_fit_warms_up_the_script_s_own_schedule_on_2_ranks(runtime_python, tmp_path):
    """decay_steps 16 -> 8 per rank; 8 steps per epoch per rank; the
    warmup multiplies the decayed, scaled rate; the model still saves."""
    rates = _rates(runtime_python, tmp_path, FIT_SCHEDULE, Options(backend="horovod", warmup_epochs=1), 2 * STEPS_PER_EPOCH)
    for step, used in enumerate(rates):
        expected = 0.2 * 0.5 ** (step / 8) * (0.5 + 0.5 * min(step / STEPS_PER_EPOCH, 1.0))
        assert used == pytest.approx(expected, rel=2e-3), (step, rates)
    assert (tmp_path / "model.keras").exists()


# ------------------------------------------------------------ tf.distribute
# A term whose gradient is 1 (summed over the replicas of loss / replicas):
# the probe variable moves by the rate itself, whatever the engine.
TAPE_PROBE = b'''import numpy as np
import tensorflow as tf

tf.keras.utils.set_random_seed(0)
x = np.random.randn(256, 4).astype("float32")
y = (x.sum(axis=1, keepdims=True) > 0).astype("float32")
ds = tf.data.Dataset.from_tensor_slices((x, y)).batch(16)
w = tf.Variable(tf.zeros([4, 1]))
probe = tf.Variable(0.0)
schedule = tf.keras.optimizers.schedules.ExponentialDecay(0.1, decay_steps=16, decay_rate=0.5)
optimizer = tf.keras.optimizers.SGD(learning_rate=schedule)


@tf.function
def train_step(xb, yb):
    with tf.GradientTape() as tape:
        loss = tf.reduce_mean(tf.nn.sigmoid_cross_entropy_with_logits(labels=yb, logits=tf.matmul(xb, w))) + probe
    grads = tape.gradient(loss, [w, probe])
    optimizer.apply_gradients(zip(grads, [w, probe]))
    return loss


for epoch in range(2):
    for xb, yb in ds:
        before = float(probe.numpy())
        train_step(xb, yb)
        used = before - float(probe.numpy())
        with open("lr-0.txt", "a") as out:
            out.write(f"{used}\\n")
'''


@pytest.fixture(scope="module")
def tfd_tfdist():
    venv = os.environ.get("TFDIST_TF_DISTRIBUTE_VENV")
    if not venv:
        missing_stack("TFDIST_TF_DISTRIBUTE_VENV is not set: `bash scripts/test.sh` builds and exports the "
                    "TensorFlow 2.21 stack")
    return os.path.join(venv, "bin", "tfdist")


def test_a_tape_loop_warms_up_its_schedule_on_2_tf_distribute_workers(tfd_tfdist, tmp_path):
    """TensorFlow 2.21 (Keras 3) as 2 TF_CONFIG workers: global batch 16 x 2,
    8 steps per epoch per worker, decay_steps 16 -> 8."""
    result = convert_source(TAPE_PROBE, "train.py", backend=Options(backend="tf-distribute", warmup_epochs=1))
    assert result.status == "converted", result.error
    assert result.warnings == [], [w.message for w in result.warnings]
    (tmp_path / "train.py").write_bytes(result.data)
    run = subprocess.run([tfd_tfdist, "run", "--backend", "tf-distribute", "-np", "2", "--timeout", "200", "train.py"],
                         cwd=tmp_path, env=cli_env(), capture_output=True, text=True, timeout=260)
    assert run.returncode == 0, run.stderr[-3000:]
    rates = [float(v) for v in (tmp_path / "lr-0.txt").read_text().split()]  # the chief's
    assert len(rates) == 2 * TAPE_STEPS, rates
    for step, used in enumerate(rates):
        expected = 0.2 * 0.5 ** (step / 8) * (0.5 + 0.5 * min(step / TAPE_STEPS, 1.0))
        assert used == pytest.approx(expected, rel=2e-3), (step, rates)
