"""The import contracts (pyproject.toml, [tool.importlinter]) hold -- the
layers, no backend below the composition root, rules independent of each
other -- and each can fail: the same check on a copy of the package with one
forbidden import added reports that import with its line."""
from __future__ import annotations

import ast
import os
import shutil
import subprocess
import sys
from pathlib import Path


ROOT = Path(__file__).resolve().parents[2]
LINT_IMPORTS = Path(sys.executable).parent / "lint-imports"



def _lint(src: Path, cwd: Path) -> subprocess.CompletedProcess:
    env = {**os.environ, "PYTHONPATH": str(src)}
    return subprocess.run([str(LINT_IMPORTS), "--config", str(cwd / "pyproject.toml"), "--no-cache"], cwd=cwd,
                          env=env, capture_output=True, text=True, timeout=300)


def test_the_package_keeps_its_layers():
    p = _lint(ROOT / "src", ROOT)
    assert p.returncode == 0, p.stdout[-3000:] + p.stderr[-3000:]
    assert "3 kept, 0 broken" in p.stdout, p.stdout[-3000:]


def _copy_with_import(tmp_path: Path, module: str, line: str) -> tuple:
    """A copy of the package (and pyproject.toml) with one import added to
    src/tfdist/<module>.py after its first import; (lint result, line number)."""
    shutil.copytree(ROOT / "src" / "tfdist", tmp_path / "src" / "tfdist",
                    ignore=shutil.ignore_patterns("__pycache__", "examples"))
    shutil.copy(ROOT / "pyproject.toml", tmp_path / "pyproject.toml")
    path = tmp_path / "src" / "tfdist" / f"{module}.py"
    text = path.read_text()
    lines = text.splitlines(keepends=True)
    at = next(n.lineno - 1 for n in ast.parse(text).body
              if isinstance(n, (ast.Import, ast.ImportFrom)) and getattr(n, "module", None) != "__future__")
    lines.insert(at, line)
    path.write_text("".join(lines))
    return _lint(tmp_path / "src", tmp_path), at + 1


def test_an_upward_import_breaks_the_layers_with_its_line(tmp_path):
    # a fact reaching up into the project layer (what rules/data_division.py once did)
    p, line = _copy_with_import(tmp_path, "facts/syntax", "from ..project import index as _upward\n")
    assert p.returncode != 0
    assert "BROKEN" in p.stdout
    assert f"tfdist.facts.syntax -> tfdist.project.index (l.{line})" in p.stdout, p.stdout[-3000:]


def test_a_fact_importing_an_action_breaks_the_layers(tmp_path):
    p, line = _copy_with_import(tmp_path, "facts/dataset_flow", "from ..actions import sharding as _edits\n")
    assert p.returncode != 0
    assert f"tfdist.facts.dataset_flow -> tfdist.actions.sharding (l.{line})" in p.stdout, p.stdout[-3000:]


def test_a_rule_importing_another_rule_breaks_independence(tmp_path):
    p, line = _copy_with_import(tmp_path, "rules/replica_fit", "from . import keras_fit as _sibling\n")
    assert p.returncode != 0
    assert "Rules are independent: no rule imports another BROKEN" in p.stdout.replace("\n", " "), p.stdout[-3000:]
    assert f"tfdist.rules.replica_fit -> tfdist.rules.keras_fit (l.{line})" in p.stdout, p.stdout[-3000:]


def test_every_rule_module_is_in_the_independence_contract():
    import tomllib
    contracts = tomllib.loads((ROOT / "pyproject.toml").read_text())["tool"]["importlinter"]["contracts"]
    listed = next(set(c["modules"]) for c in contracts if c["type"] == "independence")
    modules = {f"tfdist.rules.{p.stem}" for p in (ROOT / "src" / "tfdist" / "rules").glob("*.py") if p.stem != "__init__"}
    assert listed == modules
