"""A function of another module of the project that writes a file, called from the training
script: the call runs on rank 0 only when rank 0 alone may run it -- its result unused, no
collective in it (a forward pass of the model handed in is none; fit is one), nothing it changes
that outlives it -- and is left to every rank otherwise (the helper module is never edited)."""
import textwrap

import pytest

from tfdist.api import convert_file

SCRIPT = textwrap.dedent('''\
    import numpy as np
    import tensorflow as tf

    from helpers import report

    x = np.random.rand(256, 4).astype("float32")
    y = x.sum(axis=1)
    model = tf.keras.Sequential([tf.keras.Input((4,)), tf.keras.layers.Dense(1)])
    model.compile(optimizer=tf.keras.optimizers.SGD(0.01), loss="mse")
    history = []
    for epoch in range(3):
        model.fit(x, y, batch_size=32, epochs=1)
        {call}
''')

WRITES = '''\
def report(model, epoch, x):
    predictions = model(x[:8], training=False)
    np.save(f"predictions_{epoch}.npy", predictions.numpy())
'''


def _convert(tmp_path, call, helper, backend="horovod"):
    (tmp_path / "helpers.py").write_text("import numpy as np\n\n\n" + helper)
    script = tmp_path / "train.py"
    script.write_text(SCRIPT.replace("{call}", call))
    result = convert_file(script, backend=backend)
    assert result.status == "converted", result.error
    return result, [(c.line, c.message) for c in result.changes if c.rule == "rank0-io"]


@pytest.mark.parametrize("backend, chief", [("horovod", "hvd.rank() == 0"),
                                            ("tf-distribute", "strategy.extended.should_checkpoint")])
def test_a_helper_that_writes_runs_on_rank0_only(tmp_path, backend, chief):
    result, said = _convert(tmp_path, "report(model, epoch, x)", WRITES, backend)
    assert said == [(13, "report(), which writes NumPy save, on rank 0 only")], said
    assert f"    if {chief}:\n        report(model, epoch, x)\n" in result.code


@pytest.mark.parametrize("call, helper, why", [
    ("report(model, epoch, x)", WRITES.replace("np.save(", "history.append(0)\n    np.save(")
     .replace("def report(model, epoch, x):", "def report(model, epoch, x, history=[]):"), "no change outlives it"),
    ("report(model, epoch, x)", WRITES.replace("predictions = model(x[:8], training=False)",
                                               "model.fit(x, x, epochs=1)\n    predictions = x"), "fit: a collective"),
    ("report(model, epoch, history)", WRITES.replace("np.save(", "x.append(epoch)\n    np.save("), "grows what it is handed"),
    ("saved = report(model, epoch, x)", WRITES, "its result is kept"),
    ("report(model, epoch, x)", WRITES.replace("np.save(", "global LAST\n    LAST = epoch\n    np.save("), "global"),
])
def test_a_helper_rank0_may_not_run_alone_is_left_to_every_rank(tmp_path, call, helper, why):
    _result, said = _convert(tmp_path, call, helper)
    assert said == [], (why, said)


def test_a_write_in_a_function_the_helper_calls_counts(tmp_path):
    helper = WRITES.replace("    np.save(", "    keep(epoch, predictions)\n\n\ndef keep(epoch, predictions):\n    np.save(")
    result, said = _convert(tmp_path, "report(model, epoch, x)", helper)
    assert said == [(13, "report(), which writes NumPy save, on rank 0 only")], (said, helper)
