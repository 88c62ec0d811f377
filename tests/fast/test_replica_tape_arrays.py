"""tf-distribute GradientTape loops fed from arrays or generators: the
shapes tfdist cannot split between the replicas safely are refused, at the
line that makes them unsafe, with the reason (converted shapes: fixtures
gradient_tape/numpy_*)."""
from __future__ import annotations

import textwrap

import pytest

from tfdist.api import convert_source

HEAD = '''\
import numpy as np
import tensorflow as tf

x = np.load("x.npy")
y = np.load("y.npy")
model = tf.keras.Sequential([tf.keras.layers.Dense(2)])
opt = tf.keras.optimizers.SGD(0.1)


def train_step(xb, yb):
    with tf.GradientTape() as tape:
        loss = tf.reduce_mean(tf.square(model(xb) - yb))
    grads = tape.gradient(loss, model.trainable_variables)
    opt.apply_gradients(zip(grads, model.trainable_variables))
'''

CASES = {
    # a generator of its own making, unseeded: every worker would draw others
    # (draws from NumPy's or Python's global generator are seeded alike instead)
    "generator drawing random numbers": ('''
def batches():
    rng = np.random.default_rng()
    order = rng.permutation(len(x))
    for i in range(0, len(x), 32):
        yield x[order[i:i + 32]], y[order[i:i + 32]]


for xb, yb in batches():
    train_step(xb, yb)
''', "rng = np.random.default_rng()", "draws random numbers"),
    "per-step value that is not the batch": ('''
for i in range(100):
    rate = 0.99 ** i
    xb, yb = x[i * 32:(i + 1) * 32], y[i * 32:(i + 1) * 32]
    train_step(xb * rate, yb)
''', "rate = 0.99 ** i", "not part of the batch"),
    "same rows at every step": ('''
for i in range(100):
    xb, yb = x[:32], y[:32]
    train_step(xb, yb)
''', "xb, yb = x[:32], y[:32]", "every replica would cut the same rows"),
    "a RandomState's draws": ('''
rng = np.random.RandomState(0)
for step in range(100):
    idx = rng.choice(len(x), 32)
    train_step(x[idx], y[idx])
''', "idx = rng.choice", "may keep state"),
    "arrays made anew every epoch": ('''
for epoch in range(3):
    order = np.random.permutation(len(x))
    for i in range(len(x) // 32):
        idx = order[i * 32:(i + 1) * 32]
        train_step(x[idx], y[idx])
''', "order = np.random.permutation", "made anew"),
    "a while loop": ('''
i = 0
while i < 100:
    xb, yb = x[i * 32:(i + 1) * 32], y[i * 32:(i + 1) * 32]
    train_step(xb, yb)
    i += 1
''', "while i < 100:", "not a for loop over range"),
}


@pytest.mark.parametrize("name", sorted(CASES))
def test_unsafe_array_feed_is_refused_at_its_line(name):
    tail, line_text, reason = CASES[name]
    source = HEAD + textwrap.dedent(tail)
    result = convert_source(source.encode(), "train.py", backend="tf-distribute")
    assert result.status == "unsupported", (name, result.status)
    assert reason in result.error, result.error
    lines = source.splitlines()
    assert line_text in lines[result.error_line - 1], (result.error_line, lines[result.error_line - 1], result.error)
    assert result.data is None


def test_variables_updated_by_hand_are_updated_on_every_replica_with_the_summed_gradients():
    """No optimizer sums the replicas' gradients when a step updates its
    variables by hand (w.assign_sub(lr * g)), and a MirroredVariable takes no
    update from one replica: the gradients are summed where the tape returns
    them and each update runs through the strategy on every copy, its rate
    scaled (fixtures gradient_tape/manual_sgd_*; exact against one process
    in tests/slow/test_loss_shares_runtime.py)."""
    source = textwrap.dedent('''\
        import tensorflow as tf

        ds = tf.data.Dataset.from_tensor_slices((tf.zeros([64, 3]), tf.zeros([64, 1]))).batch(8)
        w = tf.Variable(tf.zeros([3, 1]))
        for xb, yb in ds:
            with tf.GradientTape() as tape:
                loss = tf.reduce_mean(tf.square(xb @ w - yb))
            dw = tape.gradient(loss, w)
            w.assign_sub(0.1 * dw)
        ''')
    result = convert_source(source.encode(), "train.py", backend="tf-distribute")
    assert result.status == "converted", result.error
    assert result.warnings == [], [w.message for w in result.warnings]
    code = result.code
    assert "dw = global_gradients(tape.gradient(scaled_loss, w))" in code
    assert 'update_on_replicas(w, "assign_sub", 0.1 * strategy.num_replicas_in_sync * dw)' in code
    assert "with strategy.scope():\n    w = tf.Variable(tf.zeros([3, 1]))" in code
    # a rate tfdist cannot tell: converted, and warned with the edit
    unclear = convert_source(source.replace("0.1 * dw", "0.1 * dw + 0.01 * tf.sign(dw)").encode(),
                             "train.py", backend="tf-distribute")
    assert unclear.status == "converted"
    assert any("multiply it by strategy.num_replicas_in_sync by hand" in w.message for w in unclear.warnings), \
        [w.message for w in unclear.warnings]


def test_an_inline_step_reading_the_batch_before_rebinding_it_is_handed_the_batch():
    """``x = tf.reshape(x, ...)`` first in an inline step: x is read before
    the step binds it, so the step function takes it as an argument (it
    raised UnboundLocalError at run time)."""
    source = textwrap.dedent('''\
        import tensorflow as tf

        ds = tf.data.Dataset.from_tensor_slices((tf.zeros([64, 2, 2]), tf.zeros([64, 1]))).batch(8)
        w = tf.Variable(tf.zeros([4, 1]))
        opt = tf.keras.optimizers.SGD(0.1)
        for step, (x, y) in enumerate(ds):
            x = tf.reshape(x, [-1, 4])
            with tf.GradientTape() as tape:
                loss = tf.reduce_mean(tf.square(x @ w - y))
            grads = tape.gradient(loss, [w])
            opt.apply_gradients(zip(grads, [w]))
        ''')
    result = convert_source(source.encode(), "train.py", backend="tf-distribute")
    assert result.status == "converted", result.error
    assert "def train_step(x, y):" in result.code and "run_on_replicas(train_step, x, y)" in result.code


@pytest.mark.parametrize("draw,seed", [("order = np.random.permutation(len(x))", "np.random.seed(1234)"),
                                       ("order = list(range(len(x)))\n    random.shuffle(order)", "random.seed(1234)")])
def test_a_generator_drawing_from_a_global_generator_draws_from_a_state_every_worker_shares(draw, seed):
    """A generator ordering its rows with NumPy's or Python's global
    generator yields the same batches on every worker when it draws from a
    state every worker shares: the helper swaps that state in around each
    read of the stream (tf_distribute_helpers), so the replicas' shares are
    disjoint and the script's own draws stay per worker -- no global seed
    before the loop (it made every later draw of the script alike too)."""
    source = "import random\n" + HEAD + textwrap.dedent(f'''
def batches():
    {draw}
    for i in range(0, len(x) - 31, 32):
        rows = order[i:i + 32]
        yield x[rows], y[rows]


for epoch in range(2):
    for xb, yb in batches():
        train_step(xb, yb)
''')
    result = convert_source(source.encode(), "train.py", backend="tf-distribute")
    assert result.status == "converted", result.error
    assert seed not in result.code, result.code
    assert "replica_batches(batches())" in result.code, result.code
    assert "numpy.random.set_state(shared[0])" in result.code and "random.setstate(shared[1])" in result.code
    assert any("draws from a state every worker shares" in c.message for c in result.changes), result.changes


@pytest.mark.parametrize("state", ["seen.append(i)", "log.write(str(i))", "counter[0] += 1"])
def test_a_generator_whose_calls_tfdist_cannot_see_into_is_split_and_checked_at_run_time(state):
    """A generator keeping state or calling what tfdist cannot see into
    (a list it appends to, a file it writes, a counter) is split like any
    other, and the converted script confirms at run time that every worker
    read the same first step of each pass (check=<the loop's line>): the
    workers stop, saying so, rather than train on overlapping shares."""
    source = HEAD + textwrap.dedent(f'''
seen, counter, log = [], [0], open("log.txt", "w")


def batches():
    for i in range(0, len(x), 32):
        {state}
        yield x[i:i + 32], y[i:i + 32]


for xb, yb in batches():
    train_step(xb, yb)
''')
    result = convert_source(source.encode(), "train.py", backend="tf-distribute")
    assert result.status == "converted", result.error
    line = source.splitlines().index("for xb, yb in batches():") + 1
    assert f"replica_batches(batches(), check={line})" in result.code, result.code
    assert "raise SystemExit(" in result.code and "strategy.gather(marks, axis=0)" in result.code


def test_a_step_returns_only_what_later_code_can_read_from_it():
    """Two tape loops one after the other: the first step's ``tape``,
    ``grads`` and ``preds`` are bound again by the second loop before it
    reads them, so they are no results of the first step (a GradientTape
    returned from the replicas stopped the converted script:
    ``'GradientTape' object has no attribute 'device'``); ``loss``, printed
    at the end, can be the first loop's (the second may run no step)."""
    loop = '''for images, labels in ds:
    with tf.GradientTape() as tape:
        preds = model(images)
        loss = keras.losses.sparse_categorical_crossentropy(labels, preds)
    grads = tape.gradient(loss, model.trainable_weights)
    optimizer.apply_gradients(zip(grads, model.trainable_weights))
'''
    source = ('''import numpy as np
import tensorflow as tf
import keras

x = np.random.RandomState(0).rand(64, 4).astype("float32")
y = (x.sum(axis=1) > 2).astype("int32")
model = keras.Sequential([keras.Input((4,)), keras.layers.Dense(2, activation="softmax")])
optimizer = keras.optimizers.SGD(learning_rate=0.1)
ds = tf.data.Dataset.from_tensor_slices((x, y)).batch(8)
''' + loop + loop + 'print("final loss", float(tf.reduce_mean(loss)))\n')
    result = convert_source(source.encode(), "two_loops.py", backend="tf-distribute")
    assert result.status == "converted", result.error
    text = result.data.decode()
    assert text.count("        return loss\n") == 2 and "tape = run_on_replicas" not in text, text
