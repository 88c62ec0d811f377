"""Under .ci/run a runtime test whose stack is missing fails, it does not
skip: tests/slow/conftest.py's missing_stack() turns into pytest.fail when
TFDIST_REQUIRE_STACKS=1, which .ci/run exports."""
import os
import re
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]
SLOW = ROOT / "tests" / "slow"

TINY = '''import sys
sys.path.insert(0, {slow!r})
from conftest import missing_stack, require_module


def test_needs_a_stack():
    missing_stack("needs the Frobnicator stack: run setup_frobnicator.sh")


def test_needs_a_module():
    require_module("tfdist_test_no_such_module")
'''


def _pytest(tmp_path, require):
    (tmp_path / "test_tiny.py").write_text(TINY.format(slow=str(SLOW)))
    env = {k: v for k, v in os.environ.items() if k != "TFDIST_REQUIRE_STACKS"}
    if require:
        env["TFDIST_REQUIRE_STACKS"] = "1"
    return subprocess.run([sys.executable, "-m", "pytest", "test_tiny.py", "-q", "-rsf", "-p", "no:cacheprovider"],
                          cwd=tmp_path, env=env, capture_output=True, text=True, timeout=120)


def test_a_missing_stack_skips_outside_ci(tmp_path):
    r = _pytest(tmp_path, require=False)
    assert r.returncode == 0, r.stdout + r.stderr
    assert "2 skipped" in r.stdout and "failed" not in r.stdout
    assert "needs the Frobnicator stack: run setup_frobnicator.sh" in r.stdout
    assert "could not import 'tfdist_test_no_such_module'" in r.stdout


def test_a_missing_stack_fails_under_ci(tmp_path):
    r = _pytest(tmp_path, require=True)
    assert r.returncode == 1, r.stdout + r.stderr
    assert "2 failed" in r.stdout and "skipped" not in r.stdout
    assert "needs the Frobnicator stack: run setup_frobnicator.sh [TFDIST_REQUIRE_STACKS=1" in r.stdout
    assert "could not import 'tfdist_test_no_such_module'" in r.stdout


def test_ci_run_exports_the_variable_before_the_tests():
    text = (ROOT / ".ci" / "run").read_text()
    assert text.index("export TFDIST_REQUIRE_STACKS=1") < text.index("bash scripts/test.sh")


SKIP = re.compile(r"pytest\.skip\(|pytest\.importorskip\(|mark\.skipif\(|mark\.skip\(")


@pytest.mark.parametrize("path", sorted(SLOW.glob("*.py")) + [ROOT / "tests" / "conftest.py"], ids=lambda p: p.name)
def test_every_slow_skip_goes_through_missing_stack_or_says_why_not(path):
    """A plain skip in the runtime tier must say, in the comment right above
    it, that it is not about a missing stack; the rest use missing_stack."""
    lines = path.read_text().splitlines()
    for i, line in enumerate(lines):
        if not SKIP.search(line) or line.lstrip().startswith(("#", '"""')):
            continue
        if path.name == "conftest.py" and "def missing_stack" in "\n".join(lines[max(0, i - 8):i]):
            continue  # the helper itself
        above = "\n".join(lines[max(0, i - 3):i])
        assert "Not a missing stack" in above, f"{path.name}:{i + 1}: {line.strip()}"
