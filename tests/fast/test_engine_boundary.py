"""The engine boundary: the pipeline is handed its rules and its backend.

``tfdist.engine`` imports neither the rules, nor the backends, nor anything
that does (the composition root ``tfdist.assembly``, the API, the CLI,
projects); rules reach the backend only through the context they are
given. Checked on the modules' import statements (parsed, relative imports
resolved), at any depth in the module (imports inside functions too).
"""
import ast
import importlib
from pathlib import Path

import pytest

from tfdist.api import convert_source
from tfdist.engine import findings as F
from tfdist.engine.pipeline import Pipeline

PKG = Path(__file__).resolve().parents[2] / "src" / "tfdist"

ENGINE_MAY_NOT_IMPORT = ("tfdist.rules", "tfdist.backends", "tfdist.assembly", "tfdist.api", "tfdist.cli",
                         "tfdist.project", "tfdist.runtime")
RULES_MAY_NOT_IMPORT = ("tfdist.backends", "tfdist.assembly", "tfdist.api", "tfdist.cli")


def imported_modules(path: Path, package: str):
    """(line, absolute module name) of every import in the file; for
    ``from X import y`` both X and X.y (y may be a submodule)."""
    tree = ast.parse(path.read_text(encoding="utf-8"))
    out = []
    for node in ast.walk(tree):
        if isinstance(node, ast.Import):
            out += [(node.lineno, alias.name) for alias in node.names]
        elif isinstance(node, ast.ImportFrom):
            if node.level:
                base = package.split(".")
                base = base[:len(base) - (node.level - 1)]
                module = ".".join(base + ([node.module] if node.module else []))
            else:
                module = node.module or ""
            out.append((node.lineno, module))
            out += [(node.lineno, f"{module}.{alias.name}") for alias in node.names if alias.name != "*"]
    return out


def _under(name: str, prefixes) -> bool:
    return any(name == p or name.startswith(p + ".") for p in prefixes)


def _violations(folder: str, forbidden):
    bad = []
    files = sorted((PKG / folder).glob("*.py"))
    assert files, folder
    for path in files:
        for line, module in imported_modules(path, f"tfdist.{folder}"):
            if _under(module, forbidden):
                bad.append(f"{path.name}:{line}: {module}")
    return bad


def test_import_parser_resolves_relative_imports(tmp_path):
    p = tmp_path / "m.py"
    p.write_text("from ..rules import keras_fit\nfrom . import context\nimport tfdist.backends.horovod\n"
                 "def f():\n    from ..backends import get_backend\n")
    names = [m for _, m in imported_modules(p, "tfdist.engine")]
    assert "tfdist.rules.keras_fit" in names
    assert "tfdist.engine.context" in names
    assert "tfdist.backends.horovod" in names
    assert "tfdist.backends.get_backend" in names
    assert _under("tfdist.rules.keras_fit", ENGINE_MAY_NOT_IMPORT)


def test_engine_imports_no_rules_and_no_backends():
    assert _violations("engine", ENGINE_MAY_NOT_IMPORT) == []


def test_rules_reach_the_backend_only_through_the_context():
    for folder in ("rules", "actions", "facts"):
        assert _violations(folder, RULES_MAY_NOT_IMPORT) == []


def test_rules_state_no_engine_specific_text():
    """Messages and comments name the engine's facts through the backend
    (``ctx.say``): no Horovod expression is spelled out in a rule's string
    (the rules' own description -- their engines, what they refuse -- names
    engines by name, as ``tfdist rules`` shows them)."""
    bad = []
    for path in sorted(p for folder in ("rules", "actions", "facts") for p in (PKG / folder).glob("*.py")):
        tree = ast.parse(path.read_text(encoding="utf-8"))
        docstrings = {id(n.body[0].value) for n in ast.walk(tree)
                      if isinstance(n, (ast.Module, ast.FunctionDef, ast.ClassDef)) and n.body
                      and isinstance(n.body[0], ast.Expr) and isinstance(n.body[0].value, ast.Constant)}
        docstrings |= {id(c) for n in ast.walk(tree) if isinstance(n, ast.ClassDef)
                       for a in n.body if isinstance(a, ast.Assign) for c in ast.walk(a.value)}
        for node in ast.walk(tree):
            if isinstance(node, ast.Constant) and isinstance(node.value, str) and id(node) not in docstrings \
                    and node.value not in ("horovod", "tf-distribute"):  # an engine named by its name
                if "hvd" in node.value or "Horovod" in node.value or "horovod" in node.value:
                    bad.append(f"{path.name}:{node.lineno}: {node.value[:60]!r}")
    assert bad == []


class _Recorder:
    """A rule that records what the pipeline hands it."""
    PATTERN = None

    def __init__(self, log):
        self.log = log

    def prepare(self, ctx):
        self.log.append(("prepare", ctx.backend.name))

    def apply(self, ctx):
        self.log.append(("apply", sorted(ctx.patterns)))


def test_pipeline_runs_the_rules_it_is_handed_in_order():
    assembly = importlib.import_module("tfdist.assembly")
    from tfdist.engine.source import load

    default = assembly.pipeline("horovod")
    log = []
    recorder = _Recorder(log)
    # The default rules followed by one more: every rule is prepared before any applies,
    # pattern rules apply only when their pattern was detected.
    pipeline = Pipeline([*default.rules, recorder], default.backend)
    src = load("train.py", b"import tensorflow as tf\n\nmodel = tf.keras.Sequential([tf.keras.layers.Dense(1)])\n"
                           b"model.compile(optimizer='sgd', loss='mse')\nmodel.fit(tf.data.Dataset.range(8).batch(2))\n")
    result = pipeline.convert(src)
    assert result.status == F.CONVERTED
    assert log == [("prepare", "horovod"), ("apply", ["Keras"])]
    # Without rules nothing is detected: the engine itself knows no training pattern.
    bare = Pipeline([], default.backend).convert(src)
    assert bare.status == F.UNSUPPORTED and bare.error.startswith("no training loop found")


def test_rule_state_is_kept_per_conversion():
    """Rule state lives in the conversion's context: converting the same
    source twice gives the same result (nothing leaks from the first)."""
    code = ("import tensorflow as tf\n\nopt = tf.keras.optimizers.Adam(0.001)\n"
            "model = tf.keras.Sequential([tf.keras.layers.Dense(1)])\nmodel.compile(optimizer=opt, loss='mse')\n"
            "model.fit(tf.data.Dataset.range(8).batch(2), epochs=1)\n")
    first = convert_source(code, "a.py")
    second = convert_source(code, "a.py")
    assert first.status == F.CONVERTED
    assert first.data == second.data
    assert [c.message for c in first.changes] == [c.message for c in second.changes]
    assert any("learning rate 0.001 scaled" in c.message for c in second.changes)


def test_messages_are_in_the_backends_words():
    """Rules phrase engine facts through the backend: a backend with other
    words gets them in the report and in the comments of the new code, and
    the Horovod backend's words give the Horovod text."""
    from tfdist.backends.horovod import HorovodBackend
    from tfdist.engine.source import load

    class Reworded(HorovodBackend):
        def message_words(self):
            return {**super().message_words(), "engine": "Other", "optimizer_wrapper": "OtherOptimizer"}

    assembly = importlib.import_module("tfdist.assembly")
    rules = assembly.pipeline("horovod").rules
    code = (b"import tensorflow as tf\n\nmodel = tf.keras.Sequential([tf.keras.layers.Dense(1)])\n"
            b"model.compile(optimizer=tf.keras.optimizers.SGD(0.01), loss='mse')\n"
            b"model.fit(tf.data.Dataset.range(8).batch(2), epochs=1)\n")
    other = Pipeline(rules, Reworded()).convert(load("c.py", code))
    hvd = Pipeline(rules, HorovodBackend()).convert(load("c.py", code))
    assert other.status == hvd.status == F.CONVERTED
    other_msgs = [c.message for c in other.changes]
    hvd_msgs = [c.message for c in hvd.changes]
    assert "Other initialised after the imports, one GPU per process" in other_msgs
    assert "Horovod initialised after the imports, one GPU per process" in hvd_msgs
    assert any("wrapped in OtherOptimizer" in m for m in other_msgs)
    assert any("wrapped in DistributedOptimizer" in m for m in hvd_msgs)
    assert "# Other: initialize Other." in other.code
    assert "# Horovod: initialize Horovod." in hvd.code
    assert other.code.replace("Other", "Horovod") == hvd.code  # only the words differ


@pytest.mark.parametrize("name", ["horovod"])
def test_every_backend_declares_its_words(name):
    from tfdist.backends import BACKENDS

    backend = BACKENDS[name]()
    words = backend.message_words()
    for key in ("engine", "rank", "size", "local_rank", "chief", "broadcast_op", "optimizer_wrapper",
                "tape_wrapper", "broadcast_hook", "tf1_optimizer_in_keras"):
        assert words.get(key), key
    assert backend.placeholder_names()
