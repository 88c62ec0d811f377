"""Whole-script fixtures: input.py -> expected.py, byte for byte.

Layout (one folder per case):
  fixtures/<pattern>/<case>/input.py      the user's script
  fixtures/<pattern>/<case>/expected.py   what tfdist must produce
  fixtures/noop/<case>/input.py           must come back byte-identical
  fixtures/unsupported/<case>/input.py    must be refused (exit 2)
  fixtures/unsupported/<case>/expected_error.txt
        first line: the line number reported; second line: a substring of the message
  fixtures/<pattern>/<case>/expected.tf-distribute.py
        the same input converted with --backend tf-distribute
  fixtures/<pattern>/<case>/expected.<backend>+<option>.py
        converted with options (``horovod+lr-sqrt``: --lr-scaling sqrt; read by option_keys.options_of)
The rules' own examples (src/tfdist/rules/examples/<pattern>/<case>/, shown
by ``tfdist rules ID``) are fixtures of the same layout, checked alike
(tests/fast/fixture_cases.py).
"""
import difflib
import io
import tokenize
from pathlib import Path

import pytest

from fixture_cases import FIXTURES, glob
from option_keys import options_of
from tfdist.api import convert_source

CONVERTED = [p for p in glob("*/*") if (p / "expected.py").exists()]
NOOP = sorted((FIXTURES / "noop").glob("*"))
UNSUPPORTED = sorted((FIXTURES / "unsupported").glob("*"))
PATTERN_OF_DIR = {"keras": "Keras", "gradient_tape": "GradientTape", "session": "Session",
                  "monitored_session": "MonitoredSession"}


TF_DISTRIBUTE = "tf-distribute"
CONVERTED_TFD = [p for p in glob("*/*") if (p / f"expected.{TF_DISTRIBUTE}.py").exists()]
TF1_DIRS = ("session", "monitored_session")


def _id(p):
    return f"{p.parent.name}/{p.name}"


def _convert(path: Path):
    return convert_source(path.read_bytes(), str(path))


@pytest.mark.parametrize("case", CONVERTED, ids=_id)
def test_converts_to_expected(case):
    result = _convert(case / "input.py")
    assert result.status == "converted", (result.error, result.error_line)
    expected = (case / "expected.py").read_bytes()
    if result.data != expected:
        diff = "".join(difflib.unified_diff(
            expected.decode().splitlines(True), result.data.decode().splitlines(True), "expected.py", "actual"))
        pytest.fail("converted output differs from expected.py:\n" + diff)
    if case.parent.name in PATTERN_OF_DIR:
        assert PATTERN_OF_DIR[case.parent.name] in {e.pattern for e in result.evidence}


@pytest.mark.parametrize("case", CONVERTED, ids=_id)
def test_converting_twice_changes_nothing(case):
    again = convert_source((case / "expected.py").read_bytes(), "expected.py")
    assert again.status == "already-distributed"
    assert again.data == (case / "expected.py").read_bytes()


def _comments(data: bytes):
    toks = tokenize.tokenize(io.BytesIO(data).readline)
    return sorted(t.string for t in toks if t.type == tokenize.COMMENT)


@pytest.mark.parametrize("case", CONVERTED, ids=_id)
def test_only_reported_lines_change_and_comments_survive(case):
    """Every input line is byte-identical in the output unless a reported
    change covers it; every comment of the input is still there."""
    src = (case / "input.py").read_bytes()
    result = _convert(case / "input.py")
    assert result.status == "converted"
    _assert_changes_reported_and_comments_kept(src, result)


def _assert_changes_reported_and_comments_kept(src: bytes, result) -> None:
    before = src.decode().splitlines(True)
    after = result.data.decode().splitlines(True)
    covered = set()
    for c in result.changes:
        covered.update(range(c.line, c.end_line + 1))
    matcher = difflib.SequenceMatcher(a=before, b=after, autojunk=False)
    for tag, i1, i2, _, _ in matcher.get_opcodes():
        if tag in ("replace", "delete"):
            for i in range(i1, i2):
                assert i + 1 in covered, f"line {i + 1} changed but no change is reported there: {before[i]!r}"
    out_comments = _comments(result.data)
    for comment in _comments(src):
        assert comment in out_comments, f"comment lost: {comment}"
    assert len(result.changes) > 0


@pytest.mark.parametrize("case", NOOP, ids=_id)
def test_noop_changes_nothing(case):
    """Already distributed or not TensorFlow: byte-identical output.
    TensorFlow without a training loop: refused, nothing produced."""
    src = (case / "input.py").read_bytes()
    result = _convert(case / "input.py")
    assert result.changes == []
    if result.pattern == "Unknown" and result.status == "unsupported":
        assert result.no_training and result.error_line is None
        assert result.data is None and result.code is None
    else:
        assert result.status in ("unchanged", "already-distributed"), (result.status, result.error)
        assert result.data == src


@pytest.mark.parametrize("case", UNSUPPORTED, ids=_id)
def test_unsupported_is_refused_with_line(case):
    line, needle = (case / "expected_error.txt").read_text().splitlines()[:2]
    result = _convert(case / "input.py")
    assert result.status == "unsupported"
    assert result.data is None and result.code is None
    assert result.error_line == int(line), result.error
    assert needle in result.error


def test_every_pattern_has_six_variants():
    for d, pattern in PATTERN_OF_DIR.items():
        cases = [p for p in glob(f"{d}/*") if (p / "expected.py").exists()]
        assert len(cases) >= 6, f"{d}: only {len(cases)} fixtures"


# ---------------------------------------------------------------- tf.distribute
def _convert_tfd(path: Path):
    return convert_source(path.read_bytes(), str(path), backend=TF_DISTRIBUTE)


@pytest.mark.parametrize("case", CONVERTED_TFD, ids=_id)
def test_tf_distribute_converts_to_expected(case):
    result = _convert_tfd(case / "input.py")
    assert result.status == "converted", (result.error, result.error_line)
    expected = (case / f"expected.{TF_DISTRIBUTE}.py").read_bytes()
    if result.data != expected:
        diff = "".join(difflib.unified_diff(
            expected.decode().splitlines(True), result.data.decode().splitlines(True), "expected", "actual"))
        pytest.fail(f"converted output differs from expected.{TF_DISTRIBUTE}.py:\n" + diff)
    assert PATTERN_OF_DIR[case.parent.name] in {e.pattern for e in result.evidence}
    # a case named *_warned shows a conversion with something for the user to review
    assert bool(result.warnings) == case.name.endswith("_warned"), [w.message for w in result.warnings]


@pytest.mark.parametrize("case", CONVERTED_TFD, ids=_id)
def test_tf_distribute_twice_changes_nothing(case):
    data = (case / f"expected.{TF_DISTRIBUTE}.py").read_bytes()
    again = convert_source(data, "expected.py", backend=TF_DISTRIBUTE)
    assert again.status == "already-distributed"
    assert again.data == data


@pytest.mark.parametrize("case", CONVERTED_TFD, ids=_id)
def test_tf_distribute_reports_every_changed_line(case):
    src = (case / "input.py").read_bytes()
    result = _convert_tfd(case / "input.py")
    _assert_changes_reported_and_comments_kept(src, result)


def test_tf_distribute_has_six_fixtures_per_tf2_pattern():
    for d in ("keras", "gradient_tape"):
        cases = [p for p in CONVERTED_TFD if p.parent.name == d]
        assert len(cases) >= 6, f"{d}: only {len(cases)} tf-distribute fixtures"


@pytest.mark.parametrize("case", sorted(p for d in TF1_DIRS for p in glob(f"{d}/*")
                                        if (p / "expected.py").exists()), ids=_id)
def test_tf_distribute_refuses_tf1_training(case):
    """TF1 sessions cannot run under tf.distribute's strategies: refused
    (nothing produced), pointing to the engine that can."""
    result = _convert_tfd(case / "input.py")
    assert result.status == "unsupported"
    assert result.data is None and result.code is None
    assert "--backend horovod" in result.error
    assert result.error_line is not None and result.error_line >= 1


# ---------------------------------------------------------------- options
OPTION_CASES = sorted((p.parent, p.name[len("expected."):-len(".py")])
                      for p in glob("*/*/expected.*+*.py"))


@pytest.mark.parametrize("case,key", OPTION_CASES, ids=lambda v: v if isinstance(v, str) else _id(v))
def test_converts_with_options_to_expected(case, key):
    result = convert_source((case / "input.py").read_bytes(), str(case / "input.py"), backend=options_of(key))
    assert result.status == "converted", (result.error, result.error_line)
    expected = (case / f"expected.{key}.py").read_bytes()
    if result.data != expected:
        diff = "".join(difflib.unified_diff(
            expected.decode().splitlines(True), result.data.decode().splitlines(True), "expected", "actual"))
        pytest.fail(f"converted output differs from expected.{key}.py:\n" + diff)
    _assert_changes_reported_and_comments_kept((case / "input.py").read_bytes(), result)
    policy = "sqrt" if "lr-sqrt" in key else "none" if "lr-none" in key else None
    if policy:  # the report names the policy at every rate it touched
        rated = [c for c in result.changes if "learning rate" in c.message]
        assert rated and all(f"--lr-scaling {policy}" in c.message for c in rated), [c.message for c in rated]
    if "+warmup-" in key:  # the warmup is reported at every rate and at the fit() it is added to
        epochs = key.split("+warmup-")[1].split("+")[0]
        rated = [c for c in result.changes if "learning rate" in c.message and c.rule != "lr-warmup"]
        assert rated and all(f"--warmup-epochs {epochs}" in c.message for c in rated), [c.message for c in rated]
        assert any(c.rule == "lr-warmup" and f"--warmup-epochs {epochs}" in c.message for c in result.changes)


def test_every_pattern_has_a_learning_rate_policy_fixture():
    patterns = {case.parent.name for case, key in OPTION_CASES if "+lr-" in key}
    assert patterns >= set(PATTERN_OF_DIR), patterns
