"""Tape loops over streams tfdist cannot see into (actions/stream_feeds.py):
what a library or another module hands out, an object the script iterates,
a generator method. Under tf.distribute each is split by consecutive batches
(``replica_batches(<stream>, check=<line>)``), the workers confirm at run time
that they read the same stream, and an object built before the loop is
built after NumPy and Python's random are seeded alike. The same program in
several spellings converts the same way; a loop whose step does not read
what the loop yields stays refused. (Runtime: tests/slow/test_stream_feeds_runtime.py.)"""
from __future__ import annotations

import textwrap

import pytest

from tfdist.api import convert_source

STEP = """
        with tf.GradientTape() as tape:
            loss = loss_fn(y, model(X))
        grads = tape.gradient(loss, model.trainable_variables)
        optimizer.apply_gradients(zip(grads, model.trainable_variables))
"""
HEAD = """import numpy as np
import tensorflow as tf
{imports}

features = np.zeros((100, 2), "float32")
labels = np.zeros((100, 1), "float32")
model = tf.keras.Sequential([tf.keras.layers.Dense(1)])
optimizer = tf.keras.optimizers.SGD(0.03)
loss_fn = tf.keras.losses.MeanSquaredError()
"""

#: name -> (imports, code before the loop, the loop's head, what replica_batches wraps)
SPELLINGS = {
    "module attribute": ("import d2l", "", "for X, y in d2l.load_array((features, labels), 10):",
                         "d2l.load_array((features, labels), 10)"),
    "imported function": ("from d2l import load_array", "", "for X, y in load_array((features, labels), 10):",
                          "load_array((features, labels), 10)"),
    "aliased module": ("import d2l as lib", "", "for X, y in lib.load_array((features, labels), 10):",
                       "lib.load_array((features, labels), 10)"),
    "enumerated": ("import d2l", "", "for step, (X, y) in enumerate(d2l.load_array((features, labels), 10)):",
                   "d2l.load_array((features, labels), 10)"),
    "bound to a name in the loop": ("import d2l", "", "train_iter = d2l.load_array((features, labels), 10)\n"
                                    "    for X, y in train_iter:", "train_iter"),
    "a loader attribute": ("import d2l", "loader = d2l.Loader(features, labels)\n",
                           "for X, y in loader.batches:", "loader.batches"),
}


def _source(imports, before, head, body=STEP):
    return HEAD.format(imports=imports) + before + "\nfor epoch in range(2):\n    " + head + body


@pytest.mark.parametrize("name", SPELLINGS)
def test_a_stream_tfdist_cannot_see_into_is_split_and_checked_in_every_spelling(name):
    imports, before, head, wrapped = SPELLINGS[name]
    source = _source(imports, before, head)
    result = convert_source(source.encode(), "train.py", backend="tf-distribute")
    assert result.status == "converted", (name, result.error)
    line = next(i for i, text in enumerate(source.splitlines(), 1) if text.lstrip().startswith("for ") and " in " in text
                and "range(2)" not in text)
    assert f"replica_batches({wrapped}, check={line})" in result.code, result.code
    assert "def train_step(" in result.code and "run_on_replicas(train_step" in result.code
    assert any("consecutive batches make one step" in c.message and c.line == line for c in result.changes)
    again = convert_source(result.data, "train.py", backend="tf-distribute")
    assert again.status in ("already-distributed", "unchanged") and again.data == result.data


def test_the_same_program_in_a_function_converts_alike():
    body = textwrap.indent(_source("", "", "for X, y in d2l.load_array((features, labels), 10):")
                           .split("\n", 2)[2], "    ")
    source = "import numpy as np\nimport tensorflow as tf\nimport d2l\n\n\ndef main():" + body + "\n\nmain()\n"
    result = convert_source(source.encode(), "train.py", backend="tf-distribute")
    assert result.status == "converted", result.error
    assert "replica_batches(d2l.load_array((features, labels), 10), check=" in result.code, result.code


def test_an_object_built_before_the_loop_is_built_with_numpy_and_random_seeded_alike():
    """An iterator object made before the training loops (a loader shuffling
    its samples in ``__init__``): every worker builds it after the same seeds,
    so they iterate the same order."""
    source = _source("import d2l", "trainset = d2l.Dataset(features, labels, 16)\n", "for X, y in trainset:")
    result = convert_source(source.encode(), "train.py", backend="tf-distribute")
    assert result.status == "converted", result.error
    assert "np.random.seed(1234)\n" in result.code and "random.seed(1234)\n" in result.code
    seeded = result.code.index("random.seed(1234)\n")
    assert seeded < result.code.index("trainset = d2l.Dataset(features, labels, 16)") \
        < result.code.index("replica_batches(trainset, check=")
    assert any("built before the training loop" in c.message for c in result.changes)


def test_a_stream_the_step_does_not_read_is_still_refused():
    """A loop whose step does not read what the loop yields (each file name
    read into a batch before the step): splitting the names would hand the
    statements before the step a distributed value. Refused, with the line."""
    body = """
        X, y = d2l.read_file(path)
        with tf.GradientTape() as tape:
            loss = loss_fn(y, model(X))
        grads = tape.gradient(loss, model.trainable_variables)
        optimizer.apply_gradients(zip(grads, model.trainable_variables))
"""
    source = _source("import d2l", "", "for path in d2l.list_files():", body)
    result = convert_source(source.encode(), "train.py", backend="tf-distribute")
    assert result.status == "unsupported" and "does not read a tf.data dataset" in result.error, result.error


def test_horovod_keeps_its_own_share_of_the_same_stream():
    source = _source("import d2l", "", "for X, y in d2l.load_array((features, labels), 10):")
    result = convert_source(source.encode(), "train.py", backend="horovod")
    assert result.status == "converted", result.error
    assert "rank_share(d2l.load_array((features, labels), 10))" in result.code


DRAW_STEP = """
    with tf.GradientTape() as tape:
        loss = loss_fn(by, model(bx))
    grads = tape.gradient(loss, model.trainable_variables)
    optimizer.apply_gradients(zip(grads, model.trainable_variables))
"""

#: name -> (imports, code before the loop, the draw statement, the call drawn)
DRAWS = {
    "a method of an object": ("import d2l", "corpus = d2l.Corpus(features, labels)\n",
                              "bx, by = corpus.next_batch(64)", "corpus.next_batch(64)"),
    "a module function": ("import d2l", "", "bx, by = d2l.get_batch(64)", "d2l.get_batch(64)"),
    "an imported function": ("from d2l import get_batch", "", "bx, by = get_batch(64)", "get_batch(64)"),
    "next of an iterator": ("import d2l", "it = iter(d2l.loader(features, labels))\n",
                            "bx, by = next(it)", "next(it)"),
    "a buffer's sample, keyword": ("import d2l", "buffer = d2l.Replay(10000)\n",
                                   "bx, by = buffer.sample(batch_size=64)", "buffer.sample(batch_size=64)"),
}


@pytest.mark.parametrize("name", DRAWS)
def test_a_batch_drawn_by_a_call_tfdist_cannot_see_into_is_drawn_once_per_replica(name):
    imports, before, draw, call = DRAWS[name]
    source = HEAD.format(imports=imports) + before + "\nfor step in range(1000):\n    " + draw + DRAW_STEP
    result = convert_source(source.encode(), "train.py", backend="tf-distribute")
    assert result.status == "converted", (name, result.error)
    line = source.splitlines().index("for step in range(1000):") + 1
    assert f"bx, by = replica_batches(lambda: {call}, check={line})" in result.code, result.code
    assert "for step in range(max(1, 1000 // strategy.num_replicas_in_sync)):" in result.code
    assert "run_on_replicas(train_step" in result.code
    if before:  # the object is built alike on every worker
        assert result.code.index("random.seed(1234)") < result.code.index(before.strip())
    again = convert_source(result.data, "train.py", backend="tf-distribute")
    assert again.status in ("already-distributed", "unchanged") and again.data == result.data


def test_a_draw_whose_batch_is_changed_before_the_step_is_still_refused():
    """``bx = bx / 255.0`` between the draw and the step would run outside the
    replicas on the distributed batch: refused, with the line."""
    tail = "bx, by = d2l.get_batch(64)\n    bx = bx / 255.0"
    source = HEAD.format(imports="import d2l") + "\nfor step in range(1000):\n    " + tail + DRAW_STEP
    result = convert_source(source.encode(), "train.py", backend="tf-distribute")
    assert result.status == "unsupported" and "may keep state" in result.error, result.error


AFTER = {
    "a dataset loop": ("ds = tf.data.Dataset.from_tensor_slices((features, labels)).batch(10)\n",
                       "for epoch in range(2):\n    for X, y in ds:" + STEP, "X, y"),
    "a library's stream": ("import d2l\n", "for epoch in range(2):\n    for X, y in d2l.load_array((features, labels), 10):"
                           + STEP, "X, y"),
    "rows cut by offsets": ("", "for epoch in range(2):\n    for i in range(10):\n"
                            "        X, y = features[i * 10:(i + 1) * 10], labels[i * 10:(i + 1) * 10]" + STEP, "X, y"),
    "a draw": ("import d2l\n", "for i in range(100):\n    X, y = d2l.get_batch(10)" + textwrap.dedent(STEP).replace(
        "\n", "\n    ").rstrip(" "), "X, y"),
}


@pytest.mark.parametrize("name", AFTER)
def test_the_batch_read_after_the_loop_is_this_workers_rows_there(name):
    """The last batch read after the training loop (evaluated, shown): a
    distributed value there, so it is bound to this worker's rows, as plain
    tensors, right after the loop (it was refused, or crashed at run time)."""
    before, loop, names = AFTER[name]
    source = HEAD.format(imports=before.strip() if before.startswith("import") else "") \
        + ("" if before.startswith("import") else before) + "\n" + loop + "print(model(X).shape, y[:3])\n"
    result = convert_source(source.encode(), "train.py", backend="tf-distribute")
    assert result.status == "converted", (name, result.error)
    assert f"{names} = local_values(X), local_values(y)\n" in result.code, result.code
    assert result.code.index("local_values(X), local_values(y)\n") < result.code.index("print(model(X).shape")
    assert any("read after the loop" in c.message for c in result.changes)


NEXT_IN_TAPES = '''import numpy as np
import tensorflow as tf

a_ds = tf.data.Dataset.from_tensor_slices(np.random.RandomState(0).rand(256, 4).astype("float32")).batch(16).repeat()
b_ds = tf.data.Dataset.from_tensor_slices(np.random.RandomState(1).rand(256, 4).astype("float32")).batch(16).repeat()
gen = tf.keras.Sequential([tf.keras.Input((4,)), tf.keras.layers.Dense(4)])
disc = tf.keras.Sequential([tf.keras.Input((4,)), tf.keras.layers.Dense(1)])
g_opt = tf.keras.optimizers.Adam(1e-3)
d_opt = tf.keras.optimizers.Adam(1e-3)
iterA = iter(a_ds)
iterB = iter(b_ds)
for epoch in range(100):
{reads_before}    with tf.GradientTape() as g_tape, tf.GradientTape() as d_tape:
{reads_inside}        fake = gen(trainA)
        d_loss = tf.reduce_mean(tf.square(disc(trainB) - 1.0)) + tf.reduce_mean(tf.square(disc(fake)))
        g_loss = tf.reduce_mean(tf.square(disc(fake) - 1.0))
    g_opt.apply_gradients(zip(g_tape.gradient(g_loss, gen.trainable_variables), gen.trainable_variables))
    d_opt.apply_gradients(zip(d_tape.gradient(d_loss, disc.trainable_variables), disc.trainable_variables))
'''
READS = "trainA = next(iterA)\n{indent}trainB = next(iterB)\n"


def test_next_read_inside_the_tapes_block_is_refused_with_the_edit():
    """CycleGAN's shape: the batches pulled with next() inside the tapes' with block. Moved into
    the step function they ran on the replicas, and tf.distribute stopped at the first step
    ("next(iterator) should be called from outside of replica_fn"); refused with the edit."""
    source = NEXT_IN_TAPES.format(reads_before="", reads_inside="        " + READS.format(indent="        "))
    result = convert_source(source.encode(), "cyclegan.py", backend="tf-distribute")
    assert result.status == "unsupported" and result.error_line == 14, (result.error_line, result.error)
    assert "move `trainA = next(iterA)` before that block" in result.error
    assert convert_source(source.encode(), "cyclegan.py", backend="horovod").status == "converted"


def test_next_read_before_the_tapes_block_stays_outside_the_step():
    source = NEXT_IN_TAPES.format(reads_before="    " + READS.format(indent="    "), reads_inside="")
    result = convert_source(source.encode(), "cyclegan.py", backend="tf-distribute")
    assert result.status == "converted", result.error
    text = result.data.decode()
    assert "    trainA = next(iterA)\n    trainB = next(iterB)\n" in text
    assert "def train_step(trainA, trainB):" in text
