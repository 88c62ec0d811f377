"""The rules are registered objects that say what they are (issue 38):
each has an id, a one-line description, its engines, the finding kinds it
emits and an example that is a fixture (tfdist/rules/examples/); the
pipelines run them in their order; every finding a rule makes over every
fixture is of a kind it declares; ``tfdist rules`` lists them and
``tfdist rules ID`` shows one with its example's before/after."""
from __future__ import annotations

import contextlib
import difflib
import io
from collections import defaultdict

import pytest

from fixture_cases import glob
from option_keys import options_of
from tfdist import catalog, rules
from tfdist.api import convert_source
from tfdist.backends import BACKENDS
from tfdist.engine import context as C
from tfdist.engine.rule import REGISTRY, Rule

RULES = sorted(REGISTRY.values(), key=lambda r: r.id)


def test_the_pipelines_run_the_registered_rules_in_their_order():
    assert [r.id for r in rules.DEFAULT_RULES] == [
        "refuse-environment-loops", "keras-fit", "gradient-tape", "tf1-session", "tf1-monitored-session", "rank0-io", "trackers", "lr-warmup",
        "setup"]
    assert [r.id for r in rules.REPLICATED_RULES] == [
        "refuse-environment-loops", "replica-fit", "replica-tape", "refuse-tf1-session", "refuse-tf1-monitored-session",
        "rank0-io", "worker-reads", "compiled-losses", "held-input-models", "layer-seeds",
        "trackers",
        "lr-warmup", "setup"]
    assert [r.id for r in rules.PARAMETER_SERVER_RULES] == [
        "parameter-server-fit", "parameter-server-tape", "refuse-tf1-session", "refuse-tf1-monitored-session",
        "setup"]
    assert set(REGISTRY) == {r.id for r in (*rules.DEFAULT_RULES, *rules.REPLICATED_RULES, *rules.PARAMETER_SERVER_RULES)}


@pytest.mark.parametrize("rule", RULES, ids=lambda r: r.id)
def test_a_rule_says_what_it_is(rule: Rule):
    assert rule.id and rule.id == rule.id.lower() and " " not in rule.id
    assert rule.description and "\n" not in rule.description and len(rule.description) < 220
    assert rule.engines and set(rule.engines) <= set(BACKENDS)
    assert (catalog.EXAMPLES / rule.example / "input.py").exists()
    if not rule.id.startswith("refuse-"):
        assert len(catalog.example_files(rule)) == len(rule.engines), rule.example


def _observe(cases, engines):
    """rule id -> finding kinds it made, over every case and engine (and the
    options of each case's expected.<engine>+<options>.py)."""
    current = [None]
    seen = defaultdict(set)
    change, warn = C.Context.change, C.Context.warn

    def record_change(self, node, kind, message, through=None):
        seen[current[0]].add(kind)
        return change(self, node, kind, message, through)

    def record_warn(self, node, kind, message):
        seen[current[0]].add(kind)
        return warn(self, node, kind, message)

    originals = {}
    for rule in REGISTRY.values():
        cls = type(rule)
        for name in ("prepare", "apply"):
            originals[(cls, name)] = method = getattr(cls, name)

            def wrapped(self, ctx, method=method):
                before, current[0] = current[0], self.id
                try:
                    return method(self, ctx)
                finally:
                    current[0] = before
            setattr(cls, name, wrapped)
    C.Context.change, C.Context.warn = record_change, record_warn
    try:
        for case in cases:
            keys = [*engines, *(p.name[len("expected."):-3] for p in case.glob("expected.*+*.py"))]
            for key in keys:
                convert_source((case / "input.py").read_bytes(), str(case / "input.py"),
                               backend=options_of(key))  # a bare engine name, or a fixture's options key
    finally:
        C.Context.change, C.Context.warn = change, warn
        for (cls, name), method in originals.items():
            setattr(cls, name, method)
    return seen


def test_every_finding_is_of_a_kind_its_rule_declares():
    cases = [p for p in glob("*/*") if (p / "input.py").exists() and p.parent.name != "unsupported"]
    seen = _observe(cases, ("horovod", "tf-distribute"))
    # every finding is made inside a rule, but for the pipeline's own warning
    # about hyperparameter tuners (tfdist/engine/pipeline.py)
    assert seen.pop(None, set()) <= {"data-division"}
    undeclared = {rid: sorted(kinds - set(REGISTRY[rid].kinds)) for rid, kinds in seen.items()
                  if kinds - set(REGISTRY[rid].kinds)}
    assert undeclared == {}
    never = {r.id: sorted(set(r.kinds) - seen.get(r.id, set())) for r in RULES if set(r.kinds) - seen.get(r.id, set())}
    assert never == {}  # and no rule declares a kind no fixture shows


@pytest.mark.parametrize("rule", RULES, ids=lambda r: r.id)
def test_a_rules_example_shows_the_rule_at_work(rule: Rule):
    case = catalog.EXAMPLES / rule.example
    if rule.id.startswith("refuse-"):
        for engine in rule.engines:
            result = convert_source((case / "input.py").read_bytes(), str(case / "input.py"), backend=engine)
            assert result.status == "unsupported", result.status
            # refused by one engine: the other is named; by every engine: the line says why
            assert ("--backend horovod" in result.error) if "horovod" not in rule.engines else result.error_line
        return
    seen = _observe([case], rule.engines)
    assert seen.get(rule.id), f"{rule.id}: its example {rule.example} makes none of its findings"


def _run(*argv):
    out, err = io.StringIO(), io.StringIO()
    with contextlib.redirect_stdout(out), contextlib.redirect_stderr(err):
        code = catalog.main(list(argv))
    return code, out.getvalue(), err.getvalue()


def test_tfdist_rules_lists_every_rule():
    code, out, _ = _run()
    assert code == 0
    for rule in RULES:
        assert f"\n{rule.id} " in out and ", ".join(rule.engines) in out
    assert out.startswith(f"{len(RULES)} rules")


@pytest.mark.parametrize("rule", RULES, ids=lambda r: r.id)
def test_tfdist_rules_id_shows_the_example_before_and_after(rule: Rule):
    code, out, _ = _run(rule.id)
    assert code == 0
    assert out.startswith(f"# {rule.id}\n") and rule.refuses.split(";")[0][:40] in out.replace("\n", " ")
    source = (catalog.EXAMPLES / rule.example / "input.py").read_text().splitlines(True)
    for path in catalog.example_files(rule):
        diff = "".join(difflib.unified_diff(source, path.read_text().splitlines(True), "input.py", path.name))
        assert diff.rstrip("\n") in out
    if not catalog.example_files(rule):
        assert "refused (unsupported), line " in out


def test_tfdist_rules_unknown_id_exits_3_naming_the_rules():
    code, out, err = _run("no-such-rule")
    assert code == 3 and out == ""
    assert "unknown rule 'no-such-rule'" in err and "keras-fit" in err


def test_the_command_line_runs_tfdist_rules():
    import os
    import subprocess
    import sys
    from pathlib import Path

    src = Path(__file__).resolve().parents[2] / "src"
    env = {**os.environ, "PYTHONPATH": str(src)}
    listing = subprocess.run([sys.executable, "-m", "tfdist", "rules"], capture_output=True, text=True, env=env,
                             timeout=120)
    assert listing.returncode == 0 and listing.stdout == catalog.listing()
    one = subprocess.run([sys.executable, "-m", "tfdist", "rules", "replica-tape"], capture_output=True, text=True,
                         env=env, timeout=120)
    assert one.returncode == 0 and one.stdout == catalog.describe(REGISTRY["replica-tape"])
    assert "+++ expected.tf-distribute.py" in one.stdout
