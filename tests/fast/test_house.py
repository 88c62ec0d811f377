"""The house keeps its shape (issue 38): no module under src/ passes 600
lines, no function 80; no import circle between tfdist's modules; no tfdist
module imported inside a function (to dodge a circle); no private name
(``_x``) used outside the module that defines it. Each check reads the
source with ``ast``, and each is shown able to fail on a small package
written here."""
from __future__ import annotations

import ast
from pathlib import Path
from typing import Dict, List, Set

import pytest

SRC = Path(__file__).resolve().parents[2] / "src"
MAX_MODULE_LINES = 600
MAX_FUNCTION_LINES = 80


def _modules(src: Path) -> Dict[str, Path]:
    """tfdist module name -> file (the rules' example scripts are data, not modules)."""
    out = {}
    for path in sorted(src.rglob("*.py")):
        rel = path.relative_to(src).with_suffix("")
        if "examples" in rel.parts or "__pycache__" in rel.parts:
            continue
        parts = list(rel.parts)
        if parts[-1] == "__init__":
            parts = parts[:-1]
        out[".".join(parts)] = path
    return out


def _imported(module: str, is_package: bool, node: ast.AST, known) -> List[str]:
    """The tfdist modules an import statement names (a ``from m import x``
    names ``m.x`` when that is a module, else ``m``)."""
    if isinstance(node, ast.Import):
        return [a.name for a in node.names if a.name in known]
    base = module.split(".") if is_package else module.split(".")[:-1]
    if node.level:
        base = base[:len(base) - (node.level - 1)]
        mod = ".".join(base + ([node.module] if node.module else []))
    else:
        mod = node.module or ""
    out = []
    for a in node.names:
        full = f"{mod}.{a.name}"
        out.append(full if full in known else mod)
    return [m for m in out if m in known]


def _function_imports(tree: ast.AST) -> Set[int]:
    inner = set()
    for f in ast.walk(tree):
        if isinstance(f, (ast.FunctionDef, ast.AsyncFunctionDef, ast.Lambda)):
            inner |= {id(s) for s in ast.walk(f) if isinstance(s, (ast.Import, ast.ImportFrom))}
    return inner


def survey(src: Path):
    """(graph, in-function imports, long modules, long functions, private names used elsewhere)."""
    mods = _modules(src)
    graph: Dict[str, Set[str]] = {m: set() for m in mods}
    inner: List[str] = []
    big: List[str] = []
    long_functions: List[str] = []
    privates: List[str] = []
    for m, path in mods.items():
        text = path.read_text()
        tree = ast.parse(text)
        lines = text.count("\n")
        if lines > MAX_MODULE_LINES:
            big.append(f"{path.relative_to(src)}: {lines} lines")
        for f in ast.walk(tree):
            if isinstance(f, (ast.FunctionDef, ast.AsyncFunctionDef)) and f.end_lineno - f.lineno + 1 > MAX_FUNCTION_LINES:
                long_functions.append(f"{path.relative_to(src)}:{f.lineno}: {f.name} {f.end_lineno - f.lineno + 1} lines")
        in_functions = _function_imports(tree)
        aliases = {}
        for node in ast.walk(tree):
            if not isinstance(node, (ast.Import, ast.ImportFrom)):
                continue
            targets = [t for t in _imported(m, path.name == "__init__.py", node, mods) if t != m]
            if not targets:
                continue
            if id(node) in in_functions:
                inner.append(f"{path.relative_to(src)}:{node.lineno}: imports {', '.join(targets)} inside a function")
            else:
                graph[m].update(targets)
            if isinstance(node, ast.ImportFrom):
                for a in node.names:
                    if a.name.startswith("_") and not a.name.startswith("__") and f"{targets[0]}.{a.name}" not in mods:
                        privates.append(f"{path.relative_to(src)}:{node.lineno}: {a.name} from {targets[0]}")
                    full = _imported(m, path.name == "__init__.py", node, mods)
                    if full and full[0] in mods and full[0].endswith("." + a.name):
                        aliases[a.asname or a.name] = full[0]
            else:
                for a in node.names:
                    aliases[a.asname or a.name] = a.name
        for node in ast.walk(tree):
            if (isinstance(node, ast.Attribute) and isinstance(node.value, ast.Name) and node.value.id in aliases
                    and node.attr.startswith("_") and not node.attr.startswith("__")):
                privates.append(f"{path.relative_to(src)}:{node.lineno}: {node.value.id}.{node.attr}")
    return graph, inner, big, long_functions, privates


def cycles(graph: Dict[str, Set[str]]) -> List[List[str]]:
    """The import circles: strongly connected components of more than one module."""
    index: Dict[str, int] = {}
    low: Dict[str, int] = {}
    stack: List[str] = []
    on: Set[str] = set()
    out: List[List[str]] = []

    def visit(v: str) -> None:
        index[v] = low[v] = len(index)
        stack.append(v)
        on.add(v)
        for w in sorted(graph[v]):
            if w not in index:
                visit(w)
                low[v] = min(low[v], low[w])
            elif w in on:
                low[v] = min(low[v], index[w])
        if low[v] == index[v]:
            comp = []
            while True:
                w = stack.pop()
                on.discard(w)
                comp.append(w)
                if w == v:
                    break
            if len(comp) > 1:
                out.append(sorted(comp))

    for v in sorted(graph):
        if v not in index:
            visit(v)
    return out


@pytest.fixture(scope="module")
def house():
    return survey(SRC)


def test_no_module_passes_600_lines(house):
    assert house[2] == []


def test_no_function_passes_80_lines(house):
    assert house[3] == []


def test_no_import_circle(house):
    assert cycles(house[0]) == []


def test_no_tfdist_import_inside_a_function(house):
    assert house[1] == []


def test_no_private_name_used_outside_its_module(house):
    assert house[4] == []


def _write(root: Path, files: Dict[str, str]) -> Path:
    for name, text in files.items():
        p = root / "tfdist" / name
        p.parent.mkdir(parents=True, exist_ok=True)
        p.write_text(text)
    return root


def test_every_check_can_fail(tmp_path):
    src = _write(tmp_path, {
        "__init__.py": "",
        "a.py": "from . import b\n\n\ndef f():\n    from . import c\n    return c.g() + b._hidden\n",
        "b.py": "from .a import f\n_hidden = 1\n",
        "c.py": "from .b import _hidden\n\n\ndef g():\n" + "    x = 1\n" * 85 + "    return x\n" + "#\n" * 520,
    })
    graph, inner, big, long_functions, privates = survey(src)
    assert cycles(graph) == [["tfdist.a", "tfdist.b"]]
    assert inner == ["tfdist/a.py:5: imports tfdist.c inside a function"]
    assert big == ["tfdist/c.py: 610 lines"]
    assert long_functions == ["tfdist/c.py:4: g 87 lines"]
    assert sorted(privates) == ["tfdist/a.py:6: b._hidden", "tfdist/c.py:1: _hidden from tfdist.b"]
