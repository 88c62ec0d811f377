"""A training step handed to the function that holds the loop, as a
parameter (``run_epoch(train_step, batches, steps)`` with ``def
run_epoch(step_fn, batches, steps): for _ in range(steps): step_fn(next(batches))``),
the iterator of the dataset handed in too: the shape of a held-out GAN
notebook. tf-distribute found the step but not its loop, only warned "no
training loop found around the steps", and the converted script crashed at
the first apply_gradients (the step ran outside the replicas); Horovod
divided the steps but left every rank reading the same batches. A name is
followed to what it is bound to through parameters: the call ``step_fn(...)``
runs the functions passed for ``step_fn``, ``next(batches)`` reads the
iterators passed for ``batches``. Each spelling below is one program."""
from __future__ import annotations

import libcst as cst
import pytest

from tfdist.api import convert_file
from tfdist.engine.analysis import Analysis
from tfdist.facts import dataset_iterators

PROGRAM = """\
import numpy as np
import tensorflow as tf

x = np.random.RandomState(0).rand(512, 8).astype("float32")
y = (x.sum(axis=1, keepdims=True) > 4).astype("float32")
train_ds = tf.data.Dataset.from_tensor_slices((x, y)).shuffle(512, seed=1).repeat().batch(32)
val_ds = tf.data.Dataset.from_tensor_slices((x[:64], y[:64])).batch(32)
model = tf.keras.Sequential([tf.keras.layers.Dense(16, activation="relu"), tf.keras.layers.Dense(1)])
optimizer = tf.keras.optimizers.SGD(learning_rate=0.1)
loss_fn = tf.keras.losses.BinaryCrossentropy(from_logits=True)


@tf.function
def train_step(batch):
    features, labels = batch
    with tf.GradientTape() as tape:
        loss = loss_fn(labels, model(features, training=True))
    grads = tape.gradient(loss, model.trainable_variables)
    optimizer.apply_gradients(zip(grads, model.trainable_variables))
    return loss


@tf.function
def val_step(batch):
    features, labels = batch
    return loss_fn(labels, model(features, training=False))


def run_epoch(step_fn, batches, steps, mean):
    for _ in range(steps):
        loss = step_fn(next(batches))
        mean.update_state(loss)
    result = mean.result()
    mean.reset_state()
    return float(result)


def train(dataset, epochs, steps_per_epoch):
    mean = tf.keras.metrics.Mean()
    batches = {make_iter}
    for epoch in range(epochs):
        train_loss = {train_call}
        val_loss = run_epoch(val_step, {val_iter}, 2, mean)
        print("epoch", epoch, "loss", train_loss, "val", val_loss)


train(train_ds, 3, 16)
"""

SPELLINGS = {
    "positional": dict(make_iter="iter(dataset)", val_iter="iter(val_ds)",
                       train_call="run_epoch(train_step, batches, steps_per_epoch, mean)"),
    "keywords": dict(make_iter="iter(dataset)", val_iter="iter(val_ds)",
                     train_call="run_epoch(step_fn=train_step, batches=batches, steps=steps_per_epoch, mean=mean)"),
    "dunder_iter": dict(make_iter="dataset.__iter__()", val_iter="val_ds.__iter__()",
                        train_call="run_epoch(train_step, batches, steps_per_epoch, mean)"),
    "alias": dict(make_iter="iter(dataset)", val_iter="iter(val_ds)",
                  train_call="run_epoch(fn, batches, steps_per_epoch, mean)"),
}


def _program(name: str) -> str:
    src = PROGRAM.format(**SPELLINGS[name])
    if name == "alias":  # the step bound to another name before it is handed on
        src = src.replace("    mean = tf.keras.metrics.Mean()\n", "    mean = tf.keras.metrics.Mean()\n    fn = train_step\n")
    return src


def _convert(tmp_path, src: str, backend: str):
    path = tmp_path / "train.py"
    path.write_text(src)
    return convert_file(path, backend=backend)


def _analysis(src: str) -> Analysis:
    return Analysis(cst.parse_module(src))


def test_a_call_of_a_parameter_runs_the_functions_passed_for_it():
    a = _analysis(_program("positional"))
    call = next(c for c in a.calls if isinstance(c.func, cst.Name) and c.func.value == "step_fn")
    assert sorted(f.name.value for f in a.local_functions(call.func)) == ["train_step", "val_step"]


def test_a_function_bound_to_a_name_then_passed_is_followed():
    a = _analysis(_program("alias"))
    call = next(c for c in a.calls if isinstance(c.func, cst.Name) and c.func.value == "step_fn")
    assert sorted(f.name.value for f in a.local_functions(call.func)) == ["train_step", "val_step"]


@pytest.mark.parametrize("name", ["positional", "dunder_iter"])
def test_next_of_a_parameter_reads_the_datasets_whose_iterators_are_passed(name):
    a = _analysis(_program(name))
    (read,) = [c for c in a.calls if dataset_iterators.is_next(c)]
    datasets = sorted(a.code(ds) for _next, _made, ds in dataset_iterators.next_reads(a, read))
    assert datasets == ["dataset", "val_ds"]


def test_an_iterator_of_no_dataset_is_not_followed():
    a = _analysis("def f(it):\n    return next(it)\n\nf(iter([1, 2, 3]))\n")
    (read,) = [c for c in a.calls if dataset_iterators.is_next(c)]
    assert dataset_iterators.next_reads(a, read) == []


@pytest.mark.parametrize("name", sorted(SPELLINGS))
def test_tf_distribute_runs_the_passed_step_on_the_replicas(tmp_path, name):
    r = _convert(tmp_path, _program(name), "tf-distribute")
    assert r.status == "converted", r.error
    assert not [w for w in r.warnings if "no training loop" in w.message], r.warnings
    code = r.code
    assert "loss = run_on_replicas(step_fn, next(batches))" in code
    assert "for _ in range(max(1, steps // strategy.num_replicas_in_sync)):" in code
    assert "strategy.experimental_distribute_dataset(dataset)" in code
    assert "strategy.experimental_distribute_dataset(val_ds)" in code
    assert ".batch(32 * strategy.num_replicas_in_sync)" in code
    assert "with strategy.scope():\n    model = " in code


@pytest.mark.parametrize("name", sorted(SPELLINGS))
def test_horovod_shards_the_datasets_whose_iterators_the_loop_reads(tmp_path, name):
    r = _convert(tmp_path, _program(name), "horovod")
    assert r.status == "converted", r.error
    code = r.code
    assert "for _ in range(max(1, steps // hvd.size())):" in code
    sharded = [line for line in code.splitlines() if "shard(hvd.size(), hvd.rank())" in line]
    assert [line.split(" = ")[0] for line in sharded] == ["train_ds", "val_ds"]
    assert "_draw" not in code  # the dataset is sharded: no split of one stream on top


FILES = """\
import tensorflow as tf


def load(path):
    return tf.io.decode_png(tf.io.read_file(path))


ds = tf.data.Dataset.list_files("data/*.png", shuffle=False){shuffle}.map(load).batch(8)
model = tf.keras.Sequential([tf.keras.layers.Flatten(), tf.keras.layers.Dense(1)])
opt = tf.keras.optimizers.SGD(0.1)
for x in ds:
    with tf.GradientTape() as tape:
        loss = tf.reduce_mean(model(x))
    g = tape.gradient(loss, model.trainable_variables)
    opt.apply_gradients(zip(g, model.trainable_variables))
"""


@pytest.mark.parametrize("shuffle", ["", ".shuffle(100)", ".shuffle(100, seed=3)"])
def test_horovod_shards_a_dataset_of_files_read_one_per_element(tmp_path, shuffle):
    """Each file one element (read by a map, no interleave): the files are
    sharded by rank before any shuffle, which then orders the rank's own
    share (no seed needed). They were left whole: every rank read the same
    files."""
    r = _convert(tmp_path, FILES.format(shuffle=shuffle), "horovod")
    assert r.status == "converted", r.error
    assert 'list_files("data/*.png", shuffle=False).batch(hvd.size(), drop_remainder=True).unbatch()' \
           '.shard(hvd.size(), hvd.rank())' + shuffle + ".map(load)" in r.code
    assert any("files sharded by rank" in c.message for c in r.changes)
    assert not [w for w in r.warnings if "has no seed" in w.message], r.warnings


def test_file_names_shuffled_before_their_records_are_sharded_need_a_seed(tmp_path):
    src = FILES.format(shuffle=".shuffle(100)").replace(".map(load)", ".interleave(tf.data.TFRecordDataset)")
    r = _convert(tmp_path, src, "horovod")
    assert r.status == "converted", r.error
    assert [w.line for w in r.warnings if "shuffle of file names has no seed" in w.message] == [8]


TRAINER = """\
import numpy as np
import tensorflow as tf

x = np.random.RandomState(0).rand(512, 8).astype("float32")
y = (x.sum(axis=1, keepdims=True) > 4).astype("float32")
train_ds = tf.data.Dataset.from_tensor_slices((x, y)).shuffle(512, seed=1).repeat().batch(32)


class Trainer:
    def __init__(self):
        self.model = tf.keras.Sequential([tf.keras.layers.Dense(16, activation="relu"), tf.keras.layers.Dense(1)])
        self.optimizer = tf.keras.optimizers.SGD(learning_rate=0.1)
        self.loss_fn = tf.keras.losses.BinaryCrossentropy(from_logits=True)

    @tf.function
    def train_step(self, batch):
        features, labels = batch
        with tf.GradientTape() as tape:
            loss = self.loss_fn(labels, self.model(features, training=True))
        grads = tape.gradient(loss, self.model.trainable_variables)
        self.optimizer.apply_gradients(zip(grads, self.model.trainable_variables))
        return loss

    def run_epoch(self, step_fn, batches, steps):
        for _ in range(steps):
            loss = step_fn(next(batches))
        return float(loss)

    def fit(self, dataset, epochs, steps):
        batches = iter(dataset)
        for epoch in range(epochs):
            print(epoch, self.run_epoch(self.train_step, batches, steps))


Trainer().fit(train_ds, 3, 16)
"""


def test_a_method_passed_as_the_step_is_followed(tmp_path):
    """``self.run_epoch(self.train_step, batches, steps)``: the parameter holds a method of the
    instance. Horovod left the data whole (every rank the same batches), tf-distribute warned "no
    training loop found"."""
    a = _analysis(TRAINER)
    call = next(c for c in a.calls if isinstance(c.func, cst.Name) and c.func.value == "step_fn")
    assert [f.name.value for f in a.local_functions(call.func)] == ["train_step"]
    r = _convert(tmp_path, TRAINER, "tf-distribute")
    assert r.status == "converted" and not r.warnings, (r.error, r.warnings)
    assert "loss = run_on_replicas(step_fn, next(batches))" in r.code
    assert "batches = iter(strategy.experimental_distribute_dataset(dataset))" in r.code
    r = _convert(tmp_path, TRAINER, "horovod")
    assert r.status == "converted", r.error
    assert "for _ in range(max(1, steps // hvd.size())):" in r.code
    assert [line.split(" = ")[0] for line in r.code.splitlines() if "shard(hvd.size(), hvd.rank())" in line] == ["train_ds"]


def test_a_step_no_loop_runs_is_reported_at_its_line(tmp_path):
    """One step at module level (a demo): the warning names the step's line (it said line 1)."""
    src = ("import tensorflow as tf\n\nw = tf.Variable(tf.zeros((4, 1)))\nx = tf.ones((8, 4))\n"
           "optimizer = tf.keras.optimizers.SGD(learning_rate=0.1)\nwith tf.GradientTape() as tape:\n"
           "    loss = tf.reduce_mean(tf.square(x @ w - 1.0))\ngrads = tape.gradient(loss, [w])\n"
           "optimizer.apply_gradients(zip(grads, [w]))\n")
    r = _convert(tmp_path, src, "tf-distribute")
    assert r.status == "converted", r.error
    assert [w.line for w in r.warnings if "no training loop found around this step" in w.message] == [9]
