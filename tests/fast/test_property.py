"""Property tests over generated Python programs (hypothesmith).

For every program: convert_source returns a FileResult (never raises, never
an internal error); when the input compiles, a converted output compiles too;
an unchanged result is the input byte for byte; converting the output again
changes nothing. Programs come from the Python grammar, from LibCST nodes,
and spliced into real training scripts of the four patterns (so the rules
run on odd code, not only the "nothing to do" path).

Examples per test: TFDIST_PROPERTY_SCALE (default 1.0) times the numbers
below; the counts actually run are printed (pytest -s) and checked.
"""
import os
import textwrap
import warnings

import hypothesmith
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from tfdist.api import convert_source
from tfdist.engine.findings import FileResult

SCALE = float(os.environ.get("TFDIST_PROPERTY_SCALE", "1"))
STATUSES = {"converted", "unchanged", "already-distributed", "unsupported", "error"}
COUNTS = {}
STATUS_COUNTS = {}


def n(base: int) -> int:
    return max(1, int(base * SCALE))


def prop_settings(examples: int):
    return settings(max_examples=n(examples), deadline=None, database=None, derandomize=True,
                    suppress_health_check=list(HealthCheck))


pytestmark = pytest.mark.filterwarnings("ignore::SyntaxWarning")


def compiles(src) -> bool:
    try:
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            compile(src, "<generated>", "exec")
        return True
    except (SyntaxError, ValueError, RecursionError, MemoryError, OverflowError):
        return False


def check(source: str, name: str):
    COUNTS[name] = COUNTS.get(name, 0) + 1
    data = source.encode("utf-8")
    r = convert_source(data, "gen.py")
    assert isinstance(r, FileResult)
    STATUS_COUNTS.setdefault(name, {}).setdefault(r.status, 0)
    STATUS_COUNTS[name][r.status] += 1
    assert r.status in STATUSES
    assert not (r.error or "").startswith("internal error"), r.error
    if r.status in ("unchanged", "already-distributed"):
        assert r.data == data
    if r.status == "converted":
        assert r.data != data
        if compiles(data):
            with warnings.catch_warnings():
                warnings.simplefilter("ignore")
                compile(r.data, "<converted>", "exec")
        again = convert_source(r.data, "gen.py")
        assert again.status in ("already-distributed", "unchanged"), (again.status, again.error)
        assert again.data == r.data
    elif r.status in ("unchanged", "already-distributed"):
        again = convert_source(r.data, "gen.py")
        assert again.status == r.status and again.data == data
    return r


TEMPLATES = {
    "keras": """import tensorflow as tf
from tensorflow import keras
{block}
model = keras.Sequential([keras.layers.Dense(4, activation="relu"), keras.layers.Dense(1)])
model.compile(optimizer=keras.optimizers.Adam(0.001), loss="mse")
ds = tf.data.Dataset.from_tensor_slices(([[1.0, 2.0]], [[1.0]])).batch(1)
model.fit(ds, epochs=2, callbacks=[keras.callbacks.ModelCheckpoint("ckpt")])
print("done")
{tail}""",
    "tape": """import tensorflow as tf
{block}
model = tf.keras.Sequential([tf.keras.layers.Dense(1)])
opt = tf.keras.optimizers.SGD(0.1)
dataset = tf.data.Dataset.from_tensor_slices(([[1.0]], [[2.0]])).batch(1)
for x, y in dataset:
    with tf.GradientTape() as tape:
        loss = tf.reduce_mean((model(x) - y) ** 2)
    grads = tape.gradient(loss, model.trainable_variables)
    opt.apply_gradients(zip(grads, model.trainable_variables))
    print(loss)
{tail}""",
    "session": """import tensorflow.compat.v1 as tf
tf.disable_v2_behavior()
{block}
x = tf.placeholder(tf.float32, [None, 1])
w = tf.get_variable("w", [1, 1])
loss = tf.reduce_mean(tf.square(tf.matmul(x, w) - 1.0))
train_op = tf.train.GradientDescentOptimizer(0.1).minimize(loss)
with tf.Session() as sess:
    sess.run(tf.global_variables_initializer())
    for step in range(10):
        sess.run(train_op, feed_dict={{x: [[1.0]]}})
{tail}""",
    "monitored": """import tensorflow.compat.v1 as tf
tf.disable_v2_behavior()
{block}
w = tf.get_variable("w", [1])
loss = tf.reduce_sum(w * w)
global_step = tf.train.get_or_create_global_step()
train_op = tf.train.AdamOptimizer(0.01).minimize(loss, global_step=global_step)
hooks = [tf.train.StopAtStepHook(last_step=10)]
with tf.train.MonitoredTrainingSession(checkpoint_dir="./ckpt", hooks=hooks) as sess:
    while not sess.should_stop():
        sess.run(train_op)
{tail}""",
}


def test_templates_convert_without_a_block():
    for name, t in TEMPLATES.items():
        r = convert_source(t.format(block="", tail=""), f"{name}.py")
        assert r.status == "converted", (name, r.error)


@prop_settings(600)
@given(hypothesmith.from_grammar())
def _grammar(source):
    check(source, "grammar")


@prop_settings(60)
@given(hypothesmith.from_node())
def _nodes(source):
    check(source, "libcst nodes")


def _block():
    return hypothesmith.from_grammar().filter(lambda s: s.strip() != "" and compiles(s))


@prop_settings(100)
@given(st.sampled_from(sorted(TEMPLATES)), _block(), st.booleans())
def _spliced(name, block, at_end):
    source = TEMPLATES[name].format(block="" if at_end else block, tail=block if at_end else "")
    check(source, "spliced into training scripts")


@prop_settings(50)
@given(st.sampled_from(sorted(TEMPLATES)), _block())
def _spliced_in_function(name, block):
    """The training script wrapped in main(), with the generated block inside it."""
    body = TEMPLATES[name].format(block=block, tail="")
    head, _, rest = body.partition("\n" + block)
    source = head + "\n\ndef main():\n" + textwrap.indent(block + rest, "    ") + "\n\nmain()\n"
    if compiles(source):
        check(source, "spliced inside main()")


@pytest.mark.parametrize("prop,name,minimum", [
    (_grammar, "grammar", 600),
    (_nodes, "libcst nodes", 60),
    (_spliced, "spliced into training scripts", 100),
    (_spliced_in_function, "spliced inside main()", 1),
])
def test_property(prop, name, minimum):
    COUNTS[name] = 0
    STATUS_COUNTS[name] = {}
    prop()
    print(f"\n{name}: {COUNTS[name]} generated programs checked {sorted(STATUS_COUNTS[name].items())}")
    assert COUNTS[name] >= min(n(minimum), minimum)
