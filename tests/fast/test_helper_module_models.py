"""A model another module of the project builds (``from model import
build_net``), held where the script keeps it: a name, an attribute of the
trainer's instance (``self.net = build_net(n)`` in ``__init__``, fit in a
method), one element of the tuple the factory returns (``anchors, features,
ssd = build_ssd(...)``, then ``self.ssd = ssd``), the factory reached as a
module's attribute (``import model as M``). Each spelling is one program:
tfdist follows the call into the other module, finds the model it returns,
and converts the fit on both engines (under tf.distribute the statement that
builds it runs in the strategy's scope). Before, the attribute and the
tuple spellings were "no training loop found" and the file was left as it
was (measured on a held-out repository's SSD and FCN trainers)."""
from __future__ import annotations

import textwrap

import pytest

from tfdist.api import convert_file

FACTORY = """\
from tensorflow.keras.layers import Dense, Input
from tensorflow.keras.models import Model, Sequential


def build_net(n):
    inputs = Input(shape=(n,))
    x = Dense(8, activation="relu")(inputs)
    return Model(inputs, Dense(1)(x))


def build_with_anchors(n):
    net = Sequential([Input(shape=(n,)), Dense(8, activation="relu"), Dense(1)])
    anchors = [0.5, 1.0]
    return len(anchors), (n, 1), net


def build_table(n):
    return {"n": n}


def build_compiled(n):
    net = build_net(n)
    net.compile(optimizer="adam", loss="mse")
    return net
"""

HEAD = """\
import numpy as np
from tensorflow.keras.optimizers import Adam
{imp}
"""

TAIL = """
x = np.random.random((256, 4)).astype("float32")
y = np.random.random((256, 1)).astype("float32")
"""

# (import line, body): one training program, spelt several ways
SPELLINGS = {
    "instance attribute": ("from model import build_net", """
class Trainer:
    def __init__(self, n):
        self.net = build_net(n)
        self.net.compile(optimizer=Adam(1e-3), loss="mse")

    def train(self, x, y):
        self.net.fit(x, y, batch_size=32, epochs=2)
""" + TAIL + "Trainer(4).train(x, y)\n", "self.net = build_net(n)"),
    "tuple element, then attribute": ("from model import build_with_anchors", """
class Trainer:
    def __init__(self, n):
        self.net = None
        self.build(n)

    def build(self, n):
        _, _, net = build_with_anchors(n)
        self.net = net
        optimizer = Adam(1e-3)
        self.net.compile(optimizer=optimizer, loss="mse")

    def train(self, x, y):
        self.net.fit(x, y, batch_size=32, epochs=2)
""" + TAIL + "t = Trainer(4)\nt.train(x, y)\n", "_, _, net = build_with_anchors(n)"),
    "module attribute, positional compile": ("import model as M", """
net = M.build_net(4)
net.compile(Adam(1e-3), "mse")
""" + TAIL + "net.fit(x, y, batch_size=32, epochs=2)\n", "net = M.build_net(4)"),
    "in main()": ("from model import build_net as make", """
def main():
    net = make(4)
    net.compile(loss="mse", optimizer=Adam(1e-3))
""" + textwrap.indent(TAIL, "    ") + "    net.fit(x, y, batch_size=32, epochs=2)\n\n\nmain()\n",
        "net = make(4)"),
}


def _write(tmp_path, imp, body):
    (tmp_path / "model.py").write_text(FACTORY)
    script = tmp_path / "train.py"
    script.write_text(HEAD.format(imp=imp) + body)
    return script


@pytest.mark.parametrize("spelling", sorted(SPELLINGS))
def test_a_model_of_a_helper_module_is_trained_by_the_fit_on_horovod(tmp_path, spelling):
    imp, body, _built = SPELLINGS[spelling]
    result = convert_file(_write(tmp_path, imp, body), backend="horovod")
    assert result.status == "converted", result.error
    assert "hvd.DistributedOptimizer(Adam(1e-3 * hvd.size()))" in result.code \
        or "hvd.DistributedOptimizer(optimizer)" in result.code, result.code
    assert "hvd.callbacks.BroadcastGlobalVariablesCallback(0)" in result.code, result.code
    assert "x[hvd.rank()::hvd.size()]" in result.code, result.code


@pytest.mark.parametrize("spelling", sorted(SPELLINGS))
def test_a_model_of_a_helper_module_is_built_in_the_strategy_scope(tmp_path, spelling):
    imp, body, built = SPELLINGS[spelling]
    result = convert_file(_write(tmp_path, imp, body), backend="tf-distribute")
    assert result.status == "converted", result.error
    lines = result.code.splitlines()
    at = next(i for i, line in enumerate(lines) if line.strip() == built)
    indent = len(lines[at]) - len(lines[at].lstrip())
    opener = next(line for line in reversed(lines[:at]) if len(line) - len(line.lstrip()) < indent and line.strip())
    assert opener.strip() == "with strategy.scope():", result.code
    assert "1e-3 * strategy.num_replicas_in_sync" in result.code, result.code


def test_a_helper_returning_no_model_makes_no_training_loop(tmp_path):
    """The same shape whose helper returns a plain dict: what ``fit`` is
    called on is not known to be a model, so nothing is converted (no
    guess from the method's name)."""
    script = _write(tmp_path, "from model import build_table", """
class Trainer:
    def __init__(self, n):
        self.net = build_table(n)

    def train(self, x, y):
        self.net.fit(x, y)
""" + TAIL + "Trainer(4).train(x, y)\n")
    for backend in ("horovod", "tf-distribute"):
        result = convert_file(script, backend=backend)
        assert result.status == "unsupported" and "no training loop found" in result.error, (backend, result.error)


COMPILED_ELSEWHERE = {
    "compiled by the helper": ("from model import build_compiled", "net = build_compiled(4)\n", "build_compiled()"),
    "compiled by the helper, as an attribute": ("import model", """
class Trainer:
    def __init__(self):
        self.net = model.build_compiled(4)
""", "build_compiled()"),
    "loaded compiled": ("import tensorflow as tf", "net = tf.keras.models.load_model('net.keras')\n",
                        "load_model(...)"),
}


@pytest.mark.parametrize("spelling", sorted(COMPILED_ELSEWHERE))
def test_a_model_whose_optimizer_is_set_elsewhere_is_refused_on_horovod_and_warned_on_tf_distribute(
        tmp_path, spelling):
    """No compile() of the script configures the optimizer of the model it
    fits (the helper compiles what it returns; load_model restores the saved
    optimizer): Horovod's DistributedOptimizer cannot be put around it from
    here, and the ranks would train apart -- refused, with the line and the
    edit. The strategy averages gradients itself: converted (the model made
    in its scope), its unscaled learning rate warned."""
    imp, body, where = COMPILED_ELSEWHERE[spelling]
    fit = "Trainer().net" if "Trainer" in body else "net"
    script = _write(tmp_path, imp, body + TAIL + f"{fit}.fit(x, y, batch_size=32, epochs=2)\n")
    line = script.read_text().splitlines().index(f"{fit}.fit(x, y, batch_size=32, epochs=2)") + 1
    refused = convert_file(script, backend="horovod")
    assert refused.status == "unsupported" and refused.error_line == line, (refused.status, refused.error)
    assert where in refused.error and "would not average" in refused.error, refused.error
    converted = convert_file(script, backend="tf-distribute")
    assert converted.status == "converted", converted.error
    warned = [f.message for f in converted.warnings if f.level == "WARNING" and f.rule == "lr-scaling"]
    assert len(warned) == 1 and where in warned[0] and "strategy.num_replicas_in_sync" in warned[0], warned


def test_a_model_compiled_again_after_loading_is_converted_on_horovod(tmp_path):
    """The same loaded model compiled again by the script: that compile's
    optimizer is the one trained with, and it is wrapped."""
    script = _write(tmp_path, "import tensorflow as tf", "net = tf.keras.models.load_model('net.keras')\n"
                    "net.compile(optimizer=Adam(1e-3), loss='mse')\n" + TAIL + "net.fit(x, y, batch_size=32)\n")
    result = convert_file(script, backend="horovod")
    assert result.status == "converted", result.error
    assert "hvd.DistributedOptimizer(Adam(1e-3 * hvd.size()))" in result.code
