"""Experiment trackers, progress bars and console writes report from one
process (rules/trackers.py, rules/rank0_io.py).

A rule table run through ``tfdist.api.convert_source``, under each engine:
every snippet is appended to the same small Keras ``fit`` script. INVALID
snippets come out exactly as given (the engine's chief expression filled
in); VALID snippets come out as written with no change reported on them;
WARN snippets are left as written, with a warning naming the edit.
"""
import pytest

from tfdist.api import convert_source

PRELUDE = '''import sys

import mlflow
import numpy as np
import tensorflow as tf
import wandb
from tqdm import tqdm, trange
from wandb.integration.keras import WandbMetricsLogger, WandbModelCheckpoint

x = np.random.rand(64, 4).astype("float32")
y = np.random.rand(64, 1).astype("float32")
model = tf.keras.Sequential([tf.keras.layers.Dense(1)])
model.compile(optimizer="sgd", loss="mse")
history = model.fit(x, y, epochs=1)
'''
MARK = "# --- case\n"
RULE = "rank0-io"
CHIEF = {"horovod": "hvd.rank() == 0", "tf-distribute": "strategy.extended.should_checkpoint"}
NOT_CHIEF = {"horovod": "hvd.rank() != 0", "tf-distribute": "not strategy.extended.should_checkpoint"}
BACKENDS = sorted(CHIEF)


def _convert(snippet: str, backend: str):
    result = convert_source(PRELUDE + MARK + snippet, "case.py", backend=backend)
    assert result.status == "converted", (result.status, result.error)
    return result


def _case_line() -> int:
    return (PRELUDE + MARK).count("\n") + 1


def _in_case(findings):
    return [f for f in findings if f.rule == RULE and f.line >= _case_line()]


# (snippet, exact output of the snippet, message of its change); {chief} and
# {not_chief} are the engine's expressions
INVALID = [
    # a wandb run starts disabled off the chief: config read, logs no-ops
    ('run = wandb.init(project="p", config={"lr": 0.1})\n',
     'run = wandb.init(project="p", config={"lr": 0.1}, mode=None if {chief} else "disabled")\n',
     'wandb.init(): the tracker run logs from rank 0 only (mode="disabled" elsewhere'),
    # a mode the user chose is kept on the chief
    ('wandb.init(project="p", mode="offline")\n',
     'wandb.init(project="p", mode="offline" if {chief} else "disabled")\n',
     'wandb.init(): the tracker run logs from rank 0 only'),
    # MLflow has no quiet run: its calls run on the chief only
    ('mlflow.log_param("lr", 0.1)\n', 'if {chief}:\n    mlflow.log_param("lr", 0.1)\n',
     "mlflow.log_param() on rank 0 only"),
    ('mlflow.tensorflow.autolog()\n', 'if {chief}:\n    mlflow.tensorflow.autolog()\n',
     "mlflow.tensorflow.autolog() on rank 0 only"),
    # a run around the training: a null context off the chief, the training on every process
    ('with mlflow.start_run():\n    model.fit(x, y, epochs=1, verbose=0)\n',
     'with (mlflow.start_run() if {chief} else contextlib.nullcontext()):\n',
     "mlflow.start_run(): the tracker run is opened on rank 0 only (a null context elsewhere)"),
    # progress bars: off on the other processes, by their own keyword
    ('for i in tqdm(range(3), desc="eval"):\n    pass\n',
     'for i in tqdm(range(3), desc="eval", disable={not_chief}):\n    pass\n',
     "progress bar shown on rank 0 only"),
    ('for i in trange(3, disable=False):\n    pass\n',
     'for i in trange(3, disable=(False) or {not_chief}):\n    pass\n',
     "progress bar shown on rank 0 only"),
    # console writes other than print
    ('sys.stdout.write("done\\n")\n', 'if {chief}:\n    sys.stdout.write("done\\n")\n', "console output on rank 0 only"),
    ('tqdm.write("done")\n', 'if {chief}:\n    tqdm.write("done")\n', "console output on rank 0 only"),
]


@pytest.mark.parametrize("backend", BACKENDS)
@pytest.mark.parametrize("snippet,expected,message", INVALID, ids=[c[0].splitlines()[0][:50] for c in INVALID])
def test_report_is_made_on_the_chief_only(snippet, expected, message, backend):
    result = _convert(snippet, backend)
    out = result.code[result.code.index(MARK) + len(MARK):]
    expected = expected.replace("{chief}", CHIEF[backend]).replace("{not_chief}", NOT_CHIEF[backend])
    assert expected in out, out
    assert any(message in c.message for c in _in_case(result.changes)), [c.message for c in _in_case(result.changes)]
    assert _in_case(result.warnings) == []
    compile(result.code, "converted.py", "exec")


VALID = [
    # what a disabled run does nothing with needs no guard
    'wandb.log({"loss": 0.5})\n',
    'table = wandb.Table(columns=["a"])\n',
    # reading from MLflow is not logging
    'runs = mlflow.search_runs()\n',
    # a user function called tqdm is not the progress bar
    'def bar(items):\n    return items\nfor i in bar(range(3)):\n    pass\n',
    # stderr is for errors, on every process
    'sys.stderr.write("careful\\n")\n',
]


@pytest.mark.parametrize("backend", BACKENDS)
@pytest.mark.parametrize("snippet", VALID, ids=[c.splitlines()[-1][:50] for c in VALID])
def test_non_report_stays_as_written(snippet, backend):
    result = _convert(snippet, backend)
    assert result.code.endswith(MARK + snippet), result.code[result.code.index(MARK):]
    assert _in_case(result.changes) == []


# (snippet, substring of the warning, its line within the snippet)
WARN = [
    # the run object is used: None off the chief would break that code
    ('with mlflow.start_run() as run:\n    model.fit(x, y, epochs=1, verbose=0)\n    print(run.info.run_id)\n',
     "opens a tracker run on every process, and the block uses run", 1),
    ('active = mlflow.start_run()\nprint(active.info.run_id)\n', "what it returns is used later", 1),
    # a sweep hands every agent different settings
    ('wandb.agent("sweep-id", function=lambda: None, count=2)\n', "runs a sweep whose server hands each agent", 1),
    # a mode keyword may already come through **kwargs
    ('settings = dict(project="p", mode="offline")\nwandb.init(**settings)\n', "settings holds mode=", 2),
]


@pytest.mark.parametrize("backend", BACKENDS)
@pytest.mark.parametrize("snippet,warning,line", WARN, ids=[c[0].splitlines()[0][:50] for c in WARN])
def test_unsafe_report_is_warned(snippet, warning, line, backend):
    result = _convert(snippet, backend)
    warnings = [w for w in result.warnings if w.line >= _case_line()]
    assert any(warning in w.message and w.line == _case_line() + line - 1 for w in warnings), \
        [(w.line, w.message) for w in warnings]


@pytest.mark.parametrize("backend", BACKENDS)
def test_tracker_callbacks_report_from_the_chief(backend):
    """A checkpoint callback writes files and an MLflow callback logs to a run
    that exists on the chief only; a wandb metrics callback of a disabled
    run does nothing: it stays in the list on every process."""
    snippet = ('from mlflow.keras import MlflowCallback\n'
               'model.fit(x, y, epochs=1, callbacks=[WandbMetricsLogger(), MlflowCallback()])\n')
    out = _convert(snippet, backend).code
    fit = next(line for line in out.splitlines() if "model.fit(" in line and "MlflowCallback" in line)
    if backend == "horovod":
        assert "WandbMetricsLogger()] + ([MlflowCallback()] if hvd.rank() == 0 else [])" in fit, fit
    else:
        assert "[WandbMetricsLogger(), *([MlflowCallback()] if strategy.extended.should_checkpoint else [])]" in fit, fit


def test_progress_bar_keeps_its_keyword_inside_a_rank_share():
    """A bar over a stream of steps: the rank's share wraps the bar as it is
    converted (edits of the node and of what wraps it compose)."""
    snippet = ('def batches(x, y):\n    for i in range(0, len(x), 16):\n        yield x[i:i + 16], y[i:i + 16]\n'
               'opt = tf.keras.optimizers.SGD(0.01)\n'
               'for xb, yb in tqdm(batches(x, y)):\n'
               '    with tf.GradientTape() as tape:\n'
               '        loss = tf.reduce_mean((model(xb) - yb) ** 2)\n'
               '    grads = tape.gradient(loss, model.trainable_variables)\n'
               '    opt.apply_gradients(zip(grads, model.trainable_variables))\n')
    out = _convert(snippet, "horovod").code
    assert "for xb, yb in rank_share(tqdm(batches(x, y), disable=hvd.rank() != 0)):" in out, out
