"""tf-distribute fit() on a keras Sequence (a subclass, a Keras 3 PyDataset,
an ImageDataGenerator flow): read through the emitted ``sequence_dataset``
helper (converted shapes: fixtures keras/source_*, keras/sequence_*,
keras/keras3_pydataset_fit). Here: what is warned about, with the edit, and
the helper's arithmetic -- every step one batch per replica, each worker a
disjoint, equal share -- run on the code the conversion emits."""
from __future__ import annotations

import re
import types

import pytest

from tfdist.api import convert_source

SEQUENCE = '''\
import {module}

import numpy as np
import tensorflow as tf


class Rows(tf.keras.utils.Sequence):
    def __init__(self, x, y):
        super().__init__()
        self.x, self.y = x, y
        self.rows = list(range(len(x)))

    def __len__(self):
        return len(self.x) // 16

    def __getitem__(self, index):
        rows = self.rows[index * 16:(index + 1) * 16]
        return self.x[rows], self.y[rows]

    def on_epoch_end(self):
        {reorder}


x = np.random.rand(512, 3).astype("float32")
y = x.sum(axis=1)
model = tf.keras.Sequential([tf.keras.Input(shape=(3,)), tf.keras.layers.Dense(1)])
model.compile(optimizer="adam", loss="mse")
{fit}
'''

#: (module, on_epoch_end body, fit call) -> the warnings' substrings (none: converted without hand work)
CASES = {
    "numpy's global generator: seeded alike by the helper": (
        "math", "np.random.shuffle(self.rows)", "model.fit(Rows(x, y), epochs=2, steps_per_epoch=8)", []),
    "python's random module": (
        "random", "random.shuffle(self.rows)", "model.fit(Rows(x, y), epochs=2, steps_per_epoch=8)",
        ["on_epoch_end reorders with a generator of its own"]),
    "a generator of its own": (
        "math", "np.random.default_rng(0).shuffle(self.rows)", "model.fit(Rows(x, y), epochs=2, steps_per_epoch=8)",
        ["on_epoch_end reorders with a generator of its own"]),
    "no step count, made in the call: bound to a name before it": (
        "math", "pass", "model.fit(Rows(x, y), epochs=2)", []),
    "no step count and no statement of its own to bind it before": (
        "math", "pass", "epochs = 2; model.fit(Rows(x, y), epochs=epochs)",
        ["give fit() steps_per_epoch=len(name) // strategy.num_replicas_in_sync"]),
    "no step count, a name to count": (
        "math", "pass", "train = Rows(x, y)\nmodel.fit(train, epochs=2)", []),
}


@pytest.mark.parametrize("module, reorder, fit, expected", CASES.values(), ids=list(CASES))
def test_what_is_warned_about(module, reorder, fit, expected):
    source = SEQUENCE.format(module=module, reorder=reorder, fit=fit)
    result = convert_source(source.encode(), "train.py", backend="tf-distribute")
    assert result.status == "converted", result.error
    messages = [w.message for w in result.warnings if w.level == "WARNING"]
    assert len(messages) == len(expected), messages
    for text in expected:
        assert any(text in m for m in messages), (text, messages)
    assert b"sequence_dataset(" in result.data
    if not expected:  # every fit() is given a step count the stream ends by
        assert b"steps_per_epoch=" in result.data


def test_sequence_made_in_the_call_is_bound_then_counted():
    source = SEQUENCE.format(module="math", reorder="pass", fit="model.fit(Rows(x, y), epochs=2)")
    result = convert_source(source.encode(), "train.py", backend="tf-distribute")
    code = result.data.decode()
    bound = code.index("train_batches = Rows(x, y)\n")
    assert code.index("model.fit(sequence_dataset(train_batches), epochs=2", bound) > bound
    assert "steps_per_epoch=max(1, len(train_batches) // strategy.num_replicas_in_sync)" in code


def _emitted_helper():
    """The helper exactly as a conversion writes it, bound to stand-ins for
    tf.data and the strategy that hand back the generator each input
    pipeline would feed to its replicas."""
    source = SEQUENCE.format(module="math", reorder="np.random.shuffle(self.rows)",
                             fit="train = Rows(x, y)\nmodel.fit(train, epochs=2)")
    data = convert_source(source.encode(), "train.py", backend="tf-distribute").data.decode()
    helper = re.search(r"^def sequence_dataset\(.*?(?=^\S)", data, re.S | re.M).group(0)
    fake_tf = types.SimpleNamespace(
        nest=types.SimpleNamespace(map_structure=lambda f, s: [f(v) for v in s]),
        TensorSpec=lambda shape, dtype: (shape, dtype), as_dtype=lambda d: d,
        data=types.SimpleNamespace(Dataset=types.SimpleNamespace(
            from_generator=lambda gen, output_signature: gen)))
    strategy = types.SimpleNamespace(distribute_datasets_from_function=lambda fn: fn)
    scope = {"tf": fake_tf, "strategy": strategy}
    exec(helper, scope)
    return scope["sequence_dataset"]


class _Batches:
    """A Sequence whose batch i is ([i], [i]) and that counts on_epoch_end."""
    def __init__(self, n):
        import numpy as np
        self.n, self.np, self.epochs_ended = n, np, 0

    def __len__(self):
        return self.n

    def __getitem__(self, i):
        return self.np.array([i]), self.np.array([i])

    def on_epoch_end(self):
        self.epochs_ended += 1


@pytest.mark.parametrize("workers, local", [(1, 2), (2, 1), (2, 2), (3, 1)])
@pytest.mark.parametrize("shuffle", [True, False])
def test_each_worker_reads_a_disjoint_equal_share_one_batch_per_replica(workers, local, shuffle):
    helper = _emitted_helper()
    replicas = workers * local
    for n in (37, 64):
        steps = n // replicas
        epochs = []
        streams = []
        for worker in range(workers):  # each worker is a process of its own: its own Sequence and helper
            pipeline = helper(_Batches(n), shuffle=shuffle)
            context = types.SimpleNamespace(num_replicas_in_sync=replicas, num_input_pipelines=workers,
                                            input_pipeline_id=worker)
            streams.append(pipeline(context)())
        for _epoch in range(2):
            read = [[int(next(stream)[0][0]) for _ in range(steps * local)] for stream in streams]
            flat = [i for share in read for i in share]
            assert len(flat) == len(set(flat)) == steps * replicas  # disjoint, equal shares
            assert all(len(share) == steps * local for share in read)
            epochs.append(sorted(flat))
            if not shuffle:  # step s takes the s-th group of `replicas` consecutive batches
                assert sorted(i // replicas for i in flat) == sorted(list(range(steps)) * replicas)
        if not shuffle:
            assert epochs[0] == epochs[1] == list(range(steps * replicas))


@pytest.mark.parametrize("workers, local", [(1, 2), (2, 1), (2, 2), (3, 1)])
def test_every_worker_runs_a_generator_and_keeps_its_replicas_places(workers, local):
    import numpy as np

    helper = _emitted_helper()
    replicas = workers * local
    steps = 7
    shares = []
    for worker in range(workers):  # each worker runs the generator itself, in its own process
        stream = ((np.array([i]), np.array([i])) for i in range(100))
        pipeline = helper(stream)
        context = types.SimpleNamespace(num_replicas_in_sync=replicas, num_input_pipelines=workers,
                                        input_pipeline_id=worker)
        read = pipeline(context)()
        shares.append([int(next(read)[0][0]) for _ in range(steps * local)])
    for step in range(steps):  # step s trains on the s-th group of `replicas` consecutive batches, one each
        taken = sorted(i for share in shares for i in share[step * local:(step + 1) * local])
        assert taken == list(range(step * replicas, (step + 1) * replicas))


def test_a_generator_without_a_step_count_is_warned_about():
    source = SEQUENCE.format(module="math", reorder="pass", fit="").replace(
        "class Rows", "def rows():\n    while True:\n        yield x[:16], y[:16]\n\n\nclass Rows") + \
        "model.fit(rows(), epochs=2)\n"
    result = convert_source(source.encode(), "train.py", backend="tf-distribute")
    messages = [w.message for w in result.warnings if w.level == "WARNING"]
    assert len(messages) == 1 and "a generator has no length to count" in messages[0], messages
