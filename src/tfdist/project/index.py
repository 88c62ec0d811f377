"""Cross-module facts: which classes of a project are Keras models (etc.).

``from nets import Net`` in train.py, with ``class Net(BaseNet)`` and
``class BaseNet(keras.Model)`` in other files, makes ``Net()`` a Keras model.
The engine looks such names up in :class:`ProjectContext.classes`; this
module builds that mapping for one file from the files around it.

Modules are summarised with Python's own ``ast`` parser (C speed, no
LibCST tree): module-level imports and class definitions with their bases.
Names are resolved the way Python would import them: a module name is
looked up under the file's *import root* (the first folder above it without
``__init__.py``), the file's own folder, and the tree roots, in that order.
Relative imports use the engine's own :meth:`ProjectContext.absolute`, and
re-exports (``pkg/__init__.py`` doing ``from .nets import Net``) resolve to
the class they name.
"""
from __future__ import annotations

import ast
import json
import os
import re
from dataclasses import dataclass, field
from typing import Callable, Dict, List, Optional, Sequence, Set, Tuple

from .. import apis
from ..engine.analysis import ClassFact, ProjectContext
from ..engine.objects import ROOT_KINDS
from ..engine.names import canonical
from .ipython import mask

# Cheap test, on bytes, for "may use TensorFlow or Keras" (no syntax tree).
TF_IMPORT = re.compile(rb"\b(?:import|from)[ \t]+[^\n;]*?\b(?:tensorflow|keras|tf_keras)\b|\btf_keras\b")

MAX_INDEX_BYTES = 8 << 20  # larger modules are not summarised (they cannot be class libraries anyone imports)
MAX_LAZY_MODULES = 2000  # single-file mode: at most this many sibling modules are read


def uses_tf(data: bytes) -> bool:
    return TF_IMPORT.search(data) is not None


@dataclass
class Binding:
    """A module-level import: ``local`` is bound to ``target``.

    target is the name as LibCST qualifies it: "nets.Net", ".nets.Net",
    "tensorflow" (``import tensorflow``), "tensorflow.keras" (``import
    tensorflow.keras as K``).
    """

    local: str
    target: str
    is_module: bool  # ``import X`` (target is a module), not ``from X import y``


@dataclass
class ModuleSummary:
    path: str  # absolute
    bindings: Dict[str, Binding] = field(default_factory=dict)
    classes: Dict[str, List[str]] = field(default_factory=dict)  # name -> dotted bases
    stars: List[str] = field(default_factory=list)  # ``from X import *`` targets
    functions: List[str] = field(default_factory=list)  # top-level ``def`` names
    ok: bool = True  # parsed


def summarize(path: str, data: bytes) -> ModuleSummary:
    """Module-level imports and classes, from Python's own parser."""
    s = ModuleSummary(path)
    if len(data) > MAX_INDEX_BYTES or (b"import" not in data and b"class" not in data):
        return s
    try:
        tree = ast.parse(data)
    except (SyntaxError, ValueError, RecursionError, MemoryError, UnicodeError, OverflowError):
        s.ok = False
        return s
    _collect(tree.body, s)
    return s


def _collect(body, s: ModuleSummary, top: bool = True) -> None:
    for node in body:
        if isinstance(node, ast.Import):
            for a in node.names:
                if a.asname:
                    s.bindings[a.asname] = Binding(a.asname, a.name, True)
                else:
                    top = a.name.split(".")[0]
                    s.bindings.setdefault(top, Binding(top, top, True))
                    # ``import a.b`` binds a; a.b.X is then qualified "a.b.X".
                    if "." in a.name:
                        s.bindings.setdefault("\0" + a.name, Binding(a.name, a.name, True))
        elif isinstance(node, ast.ImportFrom):
            prefix = "." * (node.level or 0) + (node.module or "")
            for a in node.names:
                if a.name == "*":
                    s.stars.append(prefix)
                    continue
                local = a.asname or a.name
                sep = "." if node.module else ""
                s.bindings[local] = Binding(local, f"{prefix}{sep}{a.name}", False)
        elif isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef)) and top:
            s.functions.append(node.name)
        elif isinstance(node, ast.ClassDef):
            s.classes[node.name] = [d for d in (_dotted(b) for b in node.bases) if d]
            s.bindings.pop(node.name, None)
        elif isinstance(node, (ast.If, ast.Try)) or type(node).__name__ == "TryStar":
            _collect(node.body, s, False)
            for h in getattr(node, "handlers", ()):
                _collect(h.body, s, False)
            _collect(getattr(node, "orelse", ()), s, False)
            _collect(getattr(node, "finalbody", ()), s, False)


def _dotted(node) -> Optional[str]:
    if isinstance(node, ast.Name):
        return node.id
    if isinstance(node, ast.Attribute):
        left = _dotted(node.value)
        return f"{left}.{node.attr}" if left else None
    return None


# ------------------------------------------------------------------ names
def import_root(path: str, is_pkg_dir: Optional[Callable[[str], bool]] = None) -> str:
    """The first folder above path's folder that is not a package."""
    is_pkg_dir = is_pkg_dir or (lambda d: os.path.isfile(os.path.join(d, "__init__.py")))
    d = os.path.dirname(os.path.abspath(path))
    while is_pkg_dir(d):
        parent = os.path.dirname(d)
        if parent == d:
            break
        d = parent
    return d


def module_name(path: str, root: str) -> Optional[str]:
    rel = os.path.relpath(os.path.abspath(path), root)
    if rel.startswith(".."):
        return None
    parts = rel.replace(os.sep, "/").split("/")
    last = parts[-1]
    for ext in (".py", ".ipynb"):
        if last.endswith(ext):
            last = last[: -len(ext)]
    parts[-1] = last
    if last == "__init__":
        parts = parts[:-1]
    if not parts or not all(p.isidentifier() for p in parts):
        return None
    return ".".join(parts)


class ProjectIndex:
    """Summaries of a project's modules and the class facts they imply.

    ``known``: absolute path -> summary for every module of a tree (tree
    mode). With ``lazy=True`` modules not in ``known`` are read from disk on
    demand (single-file mode: only what the file transitively imports).
    """

    def __init__(self, roots: Sequence[str] = (), known: Optional[Dict[str, ModuleSummary]] = None, lazy: bool = False):
        self.roots = [os.path.abspath(r) for r in roots]
        self.modules: Dict[str, ModuleSummary] = dict(known or {})
        self.lazy = lazy
        self._misses: Set[str] = set()
        self._facts: Dict[Tuple[str, str], Optional[ClassFact]] = {}
        self._busy: Set[Tuple[str, str]] = set()
        self._pkg_dirs: Dict[str, bool] = {}

    # ---------------------------------------------------------- modules
    def _is_pkg_dir(self, d: str) -> bool:
        if d not in self._pkg_dirs:
            init = os.path.join(d, "__init__.py")
            self._pkg_dirs[d] = init in self.modules or os.path.isfile(init)
        return self._pkg_dirs[d]

    def module(self, path: str) -> Optional[ModuleSummary]:
        if path in self.modules:
            return self.modules[path]
        if not self.lazy or path in self._misses or len(self.modules) >= MAX_LAZY_MODULES:
            return None
        try:
            if not os.path.isfile(path):
                raise OSError
            with open(path, "rb") as f:
                data = f.read(MAX_INDEX_BYTES + 1)
        except OSError:
            self._misses.add(path)
            return None
        s = summarize(path, data)
        self.modules[path] = s
        return s

    def search_roots(self, path: str) -> List[str]:
        out = []
        for r in (import_root(path, self._is_pkg_dir), os.path.dirname(os.path.abspath(path)), *self.roots):
            if r not in out:
                out.append(r)
        return out

    def context_names(self, path: str) -> Tuple[Optional[str], bool]:
        """(module name, is package) of a file, relative to its import root."""
        root = import_root(path, self._is_pkg_dir)
        return module_name(path, root), os.path.basename(path) == "__init__.py"

    def find(self, name: str, roots: Sequence[str]) -> Optional[ModuleSummary]:
        if not name or not all(p.isidentifier() for p in name.split(".")):
            return None
        rel = os.path.join(*name.split("."))
        for r in roots:
            for cand in (os.path.join(r, rel + ".py"), os.path.join(r, rel, "__init__.py")):
                m = self.module(cand)
                if m is not None:
                    return m
        return None

    def _package_binds(self, target: str, roots: Sequence[str]) -> bool:
        """``from pkg import name`` where pkg's ``__init__`` binds name itself
        (``from pkg.name import name``, a class or function of its own): the
        name is that binding, not the submodule pkg/name.py -- importing the
        submodule sets the attribute first, the package's binding replaces it."""
        package, _, name = target.rpartition(".")
        if not package:
            return False
        rel = os.path.join(*package.split("."))
        for r in roots:
            m = self.module(os.path.join(r, rel, "__init__.py"))
            if m is not None:
                return name in m.bindings or name in m.classes or name in m.functions
        return False

    # ---------------------------------------------------------- facts
    def _absolute(self, target: str, m: ModuleSummary) -> str:
        if not target.startswith("."):
            return target
        name, is_pkg = self.context_names(m.path)
        return ProjectContext(name, is_pkg).absolute(target)

    def fact(self, qualified: str, roots: Sequence[str], depth: int = 0) -> Optional[ClassFact]:
        """The class an absolute qualified name refers to, if it has kinds."""
        c = canonical(qualified)
        if c in ROOT_KINDS:
            return ClassFact(c, {ROOT_KINDS[c]}, [qualified])
        if depth > 20:
            return None
        parts = qualified.split(".")
        for i in range(len(parts) - 1, 0, -1):
            m = self.find(".".join(parts[:i]), roots)
            if m is not None:
                return self._member(m, parts[i:], depth + 1, roots)
        return None

    def _member(self, m: ModuleSummary, attrs: List[str], depth: int,
                found_from: Sequence[str] = ()) -> Optional[ClassFact]:
        name = attrs[0]
        if len(attrs) == 1 and name in m.classes:
            return self.class_fact(m, name, depth)
        # the roots m was found from too: a package under a folder with no
        # __init__.py (a namespace package) imports from that folder's parent
        roots = self.search_roots(m.path)
        roots += [r for r in found_from if r not in roots]
        b = m.bindings.get(name)
        if b is not None:
            return self.fact(".".join([self._absolute(b.target, m), *attrs[1:]]), roots, depth + 1)
        if len(attrs) == 1:
            for star in m.stars:
                target = star + name if (not star or star.endswith(".")) else f"{star}.{name}"
                f = self.fact(self._absolute(target, m), roots, depth + 1)
                if f is not None:
                    return f
        return None

    def resolve_local(self, m: ModuleSummary, dotted: str) -> Optional[str]:
        """Absolute qualified name of a dotted expression in module m."""
        first, _, rest = dotted.partition(".")
        if first in m.classes:
            name, _ = self.context_names(m.path)
            return None if name is None else ".".join(x for x in (name, dotted) if x)
        b = m.bindings.get(first)
        if b is None:
            return dotted  # a builtin or unknown name: qualified as itself, like LibCST
        return ".".join(x for x in (self._absolute(b.target, m), rest) if x)

    def class_fact(self, m: ModuleSummary, name: str, depth: int = 0) -> Optional[ClassFact]:
        key = (m.path, name)
        if key in self._facts:
            return self._facts[key]
        if key in self._busy or depth > 40:
            return None
        self._busy.add(key)
        kinds: Set[str] = set()
        chain = [name]
        for base in m.classes.get(name, ()):
            first = base.partition(".")[0]
            if first in m.classes and "." not in base:
                f = self.class_fact(m, base, depth + 1)
            else:
                q = self.resolve_local(m, base)
                f = self.fact(q, self.search_roots(m.path), depth + 1) if q else None
            if f is not None and f.kinds:
                kinds |= f.kinds
                if len(chain) == 1:
                    chain += f.chain
        self._busy.discard(key)
        fact = ClassFact(name, kinds, chain) if kinds else None
        self._facts[key] = fact
        return fact

    # ---------------------------------------------------------- per file
    def context_for(self, path: str, summary: Optional[ModuleSummary] = None) -> ProjectContext:
        """The ProjectContext the engine needs to convert the file at path."""
        name, is_pkg = self.context_names(path)
        if path.endswith(".ipynb"):
            name, is_pkg = None, False
        if summary is not None:
            s = summary
        else:
            s = None if path.endswith(".ipynb") else self.module(os.path.abspath(path))
        classes: Dict[str, ClassFact] = {}
        functions: Dict[str, Tuple[str, bytes]] = {}
        if s is not None:
            roots = self.search_roots(path)
            ctx = ProjectContext(name, is_pkg)
            for key, b in s.bindings.items():
                target = ctx.absolute(b.target)
                if target.split(".")[0] in apis.FRAMEWORK_ROOTS:
                    continue  # the engine knows the framework's own classes
                mod = None if not b.is_module and self._package_binds(target, roots) else self.find(target, roots)
                if mod is not None:  # ``import nets`` / ``from pkg import nets``
                    for member in self._exported(mod):
                        f = self._member(mod, [member], 0)
                        if f is not None:
                            classes[f"{target}.{member}"] = f
                elif not b.is_module:
                    f = self.fact(target, roots)
                    if f is not None:
                        classes[target] = f
                functions.update(self._functions(target, mod, roots))
        return ProjectContext(name, is_pkg, classes, functions)

    def _functions(self, target: str, mod: Optional[ModuleSummary], roots: Sequence[str],
                   depth: int = 0) -> Dict[str, Tuple[str, bytes]]:
        """The project functions and classes an import binds: every top-level
        function and class of an imported module (``import data``), or the
        one imported by name (``from data import make_dataset``), with its
        module's source (a rule reads a helper, or a class's methods, in it).
        A name a package re-exports under its own name (``from pkg import
        MNIST``, pkg/__init__.py doing ``from pkg.MNIST import MNIST``) is the
        definition it names."""
        if mod is not None:
            module, keys = target, [f"{target}.{n}" for n in [*mod.functions, *mod.classes]]
        else:
            module, _, member = target.rpartition(".")
            mod = self.find(module, roots)
            keys = [target] if mod is not None and (member in mod.functions or member in mod.classes) else []
            binding = mod.bindings.get(member) if mod is not None and not keys else None
            if binding is not None and not binding.is_module and depth < 5:
                inner = self._absolute(binding.target, mod)
                if inner.rpartition(".")[2] == member:
                    found = self._functions(inner, None, self.search_roots(mod.path) + list(roots), depth + 1)
                    return {target: value for value in found.values()}
        source = self._source(mod.path) if keys else None
        return {} if source is None else {key: (module, source) for key in keys}

    def _source(self, path: str) -> Optional[bytes]:
        try:
            with open(path, "rb") as f:
                data = f.read(MAX_INDEX_BYTES + 1)
        except OSError:
            return None
        return data if len(data) <= MAX_INDEX_BYTES else None

    @staticmethod
    def _exported(m: ModuleSummary) -> List[str]:
        return [*m.classes, *(b.local for k, b in m.bindings.items() if not k.startswith("\0") and not b.is_module)]


def summary_of_source(path: str, data: bytes) -> ModuleSummary:
    return summarize(os.path.abspath(path), data)


def notebook_summary(path: str) -> Optional[ModuleSummary]:
    """Imports of a notebook's code cells (IPython syntax masked), for the index."""
    try:
        with open(path, "rb") as f:
            nb = json.loads(f.read(MAX_INDEX_BYTES * 4).decode("utf-8-sig"))
        magics: List[str] = []
        code = []
        for c in nb.get("cells", []):
            if isinstance(c, dict) and c.get("cell_type") == "code":
                src = c.get("source", "")
                src = "".join(src) if isinstance(src, list) else src
                masked = mask(src, magics) if isinstance(src, str) else None
                if masked is not None:
                    code.append(masked)
    except (OSError, ValueError, AttributeError, TypeError, RecursionError):
        return None
    return summarize(path, "\n".join(code).encode("utf-8"))


def project_context_for_file(path: str) -> ProjectContext:
    """Single-file mode: facts from the modules the file (transitively) imports.

    Looks under the file's import root and its own folder only, and reads at
    most MAX_LAZY_MODULES modules: converting ~/train.py never walks ~.
    A notebook is not importable itself, but what its cells import counts.
    """
    path = os.path.abspath(path)
    index = ProjectIndex(lazy=True)
    if path.endswith(".ipynb"):
        return index.context_for(path, notebook_summary(path))
    return index.context_for(path)
