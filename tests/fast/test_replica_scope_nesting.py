"""tf-distribute conversions never put code in ``strategy.scope()`` twice:
no scope written inside another, and no scoped statement calling a function
of the script that enters the scope itself (every converted fixture)."""
from __future__ import annotations

import ast

import pytest

from fixture_cases import glob

CASES = glob("*/*/expected.tf-distribute.py")


def _is_scope(node: ast.AST) -> bool:
    return isinstance(node, ast.With) and any(
        isinstance(i.context_expr, ast.Call) and isinstance(i.context_expr.func, ast.Attribute)
        and i.context_expr.func.attr == "scope" for i in node.items)


def _scopes(tree: ast.AST):
    return [n for n in ast.walk(tree) if _is_scope(n)]


@pytest.mark.parametrize("path", CASES, ids=lambda p: f"{p.parent.parent.name}/{p.parent.name}")
def test_no_scope_entered_twice(path):
    tree = ast.parse(path.read_text(encoding="utf-8"))
    scoped_functions = {f.name for f in ast.walk(tree) if isinstance(f, ast.FunctionDef) and _scopes(f)}
    for outer in _scopes(tree):
        inner = [n for n in _scopes(outer) if n is not outer]
        assert not inner, f"{path}: line {inner[0].lineno}: a scope inside the scope of line {outer.lineno}"
        calls = [c for c in ast.walk(outer) if isinstance(c, ast.Call) and isinstance(c.func, ast.Name)
                 and c.func.id in scoped_functions]
        assert not calls, f"{path}: line {calls[0].lineno}: {calls[0].func.id}() enters the scope inside the scope of line {outer.lineno}"


def test_cases_found():
    assert len(CASES) >= 26
