"""Facts are computed once per module and cached (engine/memo.py's @fact).

Every public question of ``tfdist.facts`` asked about an analysed module
(first parameter ``a``, or ``other`` for a sibling module's analysis) is a
``@fact``; its answer is kept on the Analysis, so the rules and actions that
ask the same question share one computation.
"""
from __future__ import annotations

import importlib
import inspect
import pkgutil

import libcst as cst
import pytest

import tfdist.facts as facts_pkg
from tfdist.engine import memo
from tfdist.engine.analysis import Analysis
from tfdist.facts import tf1_train_ops


def _fact_modules():
    for info in pkgutil.iter_modules(facts_pkg.__path__):
        yield importlib.import_module(f"tfdist.facts.{info.name}")


def _questions():
    for module in _fact_modules():
        for name, fn in vars(module).items():
            if name.startswith("_") or not inspect.isfunction(fn) or fn.__module__ != module.__name__:
                continue
            params = list(inspect.signature(fn).parameters)
            if params and params[0] in ("a", "other"):
                yield f"{module.__name__}.{name}", fn


def test_every_question_about_a_module_is_a_cached_fact():
    questions = dict(_questions())
    assert len(questions) > 150  # the facts layer, not an empty list
    uncached = sorted(name for name, fn in questions.items() if not getattr(fn, "is_fact", False))
    assert uncached == [], f"facts that recompute per call (decorate with @fact): {uncached}"


SCRIPT = '''
import tensorflow as tf
x = tf.compat.v1.placeholder(tf.float32, [None, 3])
loss = tf.reduce_mean(x)
train_op = tf.compat.v1.train.AdamOptimizer(0.01).minimize(loss)
with tf.compat.v1.Session() as sess:
    sess.run(train_op)
'''


def test_a_fact_is_computed_once_and_each_caller_gets_its_own_copy(monkeypatch):
    a = Analysis(cst.parse_module(SCRIPT))
    first = tf1_train_ops.optimizer_calls(a)
    assert len(first) == 1
    held = memo.answers(a)
    first.append("a caller's own addition")
    calls = []
    monkeypatch.setattr(a, "types", lambda *args: calls.append(args) or set())  # recomputing would call it
    again = tf1_train_ops.optimizer_calls(a)
    assert len(again) == 1 and calls == []  # answered from the cache, untouched by the caller's append
    assert memo.answers(a) == held
    other = Analysis(cst.parse_module(SCRIPT))  # another module: its own answers
    assert memo.answers(other) == 0


def test_unhashable_arguments_are_answered_afresh_and_generators_refused():
    seen = []

    @memo.fact
    def question(a, names):
        seen.append(names)
        return len(names)

    a = Analysis(cst.parse_module("x = 1\n"))
    assert question(a, ("x",)) == 1 and question(a, ("x",)) == 1
    assert len(seen) == 1
    assert question(a, ["x", "y"]) == 2 and question(a, ["x", "y"]) == 2  # a list: no key
    assert len(seen) == 3
    with pytest.raises(TypeError, match="generator"):
        @memo.fact
        def walk(a):
            yield a
