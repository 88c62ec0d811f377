"""The layers contract (pyproject.toml, [tool.importlinter]) holds, and it
can fail: the same check on a copy of the package with one upward import
added reports that import with its line."""
from __future__ import annotations

import os
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]
LINT_IMPORTS = Path(sys.executable).parent / "lint-imports"

pytestmark = pytest.mark.skipif(not LINT_IMPORTS.exists(), reason="import-linter is not installed (requirements/test.txt)")


def _lint(src: Path, cwd: Path) -> subprocess.CompletedProcess:
    env = {**os.environ, "PYTHONPATH": str(src)}
    return subprocess.run([str(LINT_IMPORTS), "--config", str(cwd / "pyproject.toml"), "--no-cache"], cwd=cwd,
                          env=env, capture_output=True, text=True, timeout=300)


def test_the_package_keeps_its_layers():
    p = _lint(ROOT / "src", ROOT)
    assert p.returncode == 0, p.stdout[-3000:] + p.stderr[-3000:]
    assert "2 kept, 0 broken" in p.stdout, p.stdout[-3000:]


def test_an_upward_import_breaks_the_contract_with_its_line(tmp_path):
    shutil.copytree(ROOT / "src" / "tfdist", tmp_path / "src" / "tfdist",
                    ignore=shutil.ignore_patterns("__pycache__"))
    shutil.copy(ROOT / "pyproject.toml", tmp_path / "pyproject.toml")
    rule = tmp_path / "src" / "tfdist" / "rules" / "common.py"
    lines = rule.read_text().splitlines(keepends=True)
    # after the module docstring and __future__ import: a rule reaching up
    # into the project layer (what rules/data_division.py once did)
    at = next(i for i, line in enumerate(lines) if line.startswith(("import ", "from ")) and "__future__" not in line)
    lines.insert(at, "from ..project import index as _upward\n")
    rule.write_text("".join(lines))
    p = _lint(tmp_path / "src", tmp_path)
    assert p.returncode != 0
    assert "BROKEN" in p.stdout
    assert f"tfdist.rules.common -> tfdist.project.index (l.{at + 1})" in p.stdout, p.stdout[-3000:]
