"""Facts about one module: what names mean, class hierarchy, value types.

:class:`Analysis` is the program model every fact and rule reads: the scope
walk's parents, scopes and bindings, source positions, qualified names, and
(from its mixins) the class hierarchy (:mod:`.classes`), the values names are
bound to (:mod:`.values`), small flow-insensitive type inference
(:mod:`.inference`) and the keys of mappings (:mod:`.mappings`). Type
inference is enough to know that ``model`` in ``model.fit(...)`` is a Keras
model built by ``keras.Sequential``, by a user subclass of ``keras.Model``
(several levels deep, or in a sibling module), or by a factory function in
the file that returns one -- and it never guesses: an unknown value has no
type.
"""
from __future__ import annotations

from dataclasses import dataclass, field
from typing import Dict, Iterator, List, Mapping, Optional, Set, Tuple

import libcst as cst

from . import positions
from .classes import ClassHierarchy
from .inference import TypeInference
from .mappings import Mappings
from .names import canonical
from .objects import (CALLBACK, CHECKPOINT, CONFIG_PROTO, DATASET, FILE_WRITER, INSTANCE, KERAS_OPTIMIZER, MODEL,
                      MODULE, MONITORED_SESSION, SAVER, SCHEDULE, SEQUENCE, SESSION, TAPE, TF1_FILE_WRITER,
                      TF1_OPTIMIZER, TUTORIAL_DATASETS, ClassFact, Type)
from .project_modules import ProjectModules
from .reaching import Reaching
from .scopes import ModuleScopes
from .values import BoundValues, returned_values

# The kinds of objects and the facts below are read as ``A.MODEL``,
# ``A.Type`` by the facts and rules (``from ..engine import analysis as A``).
__all__ = ["Analysis", "ProjectContext", "module_class_facts", "returned_values", "ClassFact", "Type",
           "CALLBACK", "CHECKPOINT", "CONFIG_PROTO", "DATASET", "FILE_WRITER", "INSTANCE", "KERAS_OPTIMIZER",
           "MODEL", "MODULE", "MONITORED_SESSION", "SAVER", "SCHEDULE", "SEQUENCE", "SESSION", "TAPE",
           "TF1_FILE_WRITER", "TF1_OPTIMIZER", "TUTORIAL_DATASETS"]


@dataclass
class ProjectContext:
    """What the rest of a project tells about one of its modules."""

    module_name: Optional[str] = None  # dotted name, to resolve relative imports
    is_package: bool = False  # the module is a package's __init__.py
    # absolute qualified name ("nets.Net") -> fact from the module defining it
    classes: Mapping[str, ClassFact] = field(default_factory=dict)
    # absolute qualified name of a function or class another module of the
    # project defines at its top level ("data.make_dataset") -> (that
    # module's dotted name, its source): a rule follows a helper, or a
    # method of an instance of the class, into it without reading files
    functions: Mapping[str, Tuple[str, bytes]] = field(default_factory=dict)

    def absolute(self, qualified: str) -> str:
        if not qualified.startswith(".") or not self.module_name:
            return qualified
        dots = len(qualified) - len(qualified.lstrip("."))
        parts = self.module_name.split(".")
        if not self.is_package:
            parts = parts[:-1]
        if dots > 1:
            parts = parts[: len(parts) - (dots - 1)] if dots - 1 <= len(parts) else []
        rest = qualified[dots:]
        return ".".join([*parts, rest]) if parts else rest


class Analysis(ClassHierarchy, BoundValues, TypeInference, Mappings, ProjectModules):
    def __init__(self, module: cst.Module, project: Optional[ProjectContext] = None):
        self.module = module
        self.project = project or ProjectContext()
        self.scopes = ModuleScopes(module)  # parents, scopes, bindings: one walk
        self.reaching = Reaching(self.scopes)  # which of them reach a use
        self._parents = self.scopes.parents
        self._pos, self.text, self.pieces = positions.compute(module)  # the text is module.code
        # what a name means never changes while a module is converted: asked once per node
        self._qualified: Dict[cst.CSTNode, frozenset] = {}
        self._names: Dict[cst.CSTNode, Tuple[str, ...]] = {}  # sorted
        by_type = self.scopes.by_type

        def ordered(*types):
            nodes = [n for t in types for n in by_type.get(t, ())]
            nodes.sort(key=self._start)
            return nodes

        self.calls: List[cst.Call] = ordered(cst.Call)
        self.withs: List[cst.With] = ordered(cst.With)
        self.classdefs: List[cst.ClassDef] = ordered(cst.ClassDef)
        self.functions: Dict[str, List[cst.FunctionDef]] = {}
        for fdef in ordered(cst.FunctionDef):
            self.functions.setdefault(fdef.name.value, []).append(fdef)
        self.for_loops: List[cst.For] = ordered(cst.For)
        self.while_loops: List[cst.While] = ordered(cst.While)
        self.assigns: List[cst.Assign] = ordered(cst.Assign)
        self.imports: List[cst.CSTNode] = ordered(cst.Import, cst.ImportFrom)
        self.classes: Dict[str, ClassFact] = {}
        for cd in self.classdefs:
            self.class_fact(cd, set())
        self._type_cache: Dict[int, Set[Type]] = {}
        self._name_calls: Dict[int, List[cst.Call]] = {}  # id(FunctionDef) -> its calls by name
        self._code_cache: Dict[cst.CSTNode, str] = {}

    def _start(self, node: cst.CSTNode):
        # Source order; of two nodes starting together (``a.b().c()``) the
        # inner, shorter one first.
        return self._pos.get(node) or (0, 0, 0, 0)

    # ---------------------------------------------------------------- basics
    def line(self, node: cst.CSTNode) -> int:
        p = self._pos.get(node)
        return p[0] if p else 0

    def end_line(self, node: cst.CSTNode) -> int:
        p = self._pos.get(node)
        return p[2] if p else 0

    def col(self, node: cst.CSTNode) -> int:
        p = self._pos.get(node)
        return p[1] + 1 if p else 0

    def parent(self, node: cst.CSTNode) -> Optional[cst.CSTNode]:
        return self._parents.get(node)

    def ancestors(self, node: cst.CSTNode) -> Iterator[cst.CSTNode]:
        p = self.parent(node)
        while p is not None:
            yield p
            p = self.parent(p)

    def qualified(self, node: cst.CSTNode) -> Set[str]:
        """Raw qualified names (relative imports made absolute); a method of
        an object a known factory returned is named by the factory's class
        (:meth:`instance_method_names`)."""
        known = self._qualified.get(node)
        if known is None:
            out = {self.project.absolute(q) for q in self.scopes.qualified(node, follow_aliases=True)}
            known = self._qualified[node] = frozenset(out | self.instance_method_names(node))
        return set(known)

    def names(self, node: cst.CSTNode) -> Set[str]:
        """Canonical qualified names of a Name/Attribute/Call (its callee)."""
        return set(self._sorted_names(node))

    def _sorted_names(self, node: cst.CSTNode) -> Tuple[str, ...]:
        """names(node), sorted, computed once per node."""
        if isinstance(node, cst.Call):
            node = node.func
        known = self._names.get(node)
        if known is None:
            known = self._names[node] = tuple(sorted({canonical(q) for q in self.qualified(node)}))
        return known

    def is_name(self, node: cst.CSTNode, table) -> Optional[str]:
        for n in self._sorted_names(node):
            if n in table:
                return n
        return None

    def code(self, node: cst.CSTNode) -> str:
        # Rules ask for the same nodes' source many times; nodes are immutable.
        text = self._code_cache.get(node)
        if text is None:
            text = self._code_cache[node] = self.module.code_for_node(node)
        return text

    def enclosing_function(self, node: cst.CSTNode) -> Optional[cst.FunctionDef]:
        for a in self.ancestors(node):
            if isinstance(a, cst.FunctionDef):
                return a
        return None

    def statement_of(self, node: cst.CSTNode) -> Optional[cst.BaseStatement]:
        """The statement, directly in a Module or IndentedBlock body, holding node."""
        cur = node
        while cur is not None:
            par = self.parent(cur)
            if isinstance(cur, (cst.SimpleStatementLine, cst.BaseCompoundStatement)) and isinstance(
                par, (cst.Module, cst.IndentedBlock)
            ):
                return cur
            cur = par
        return None

    def block_of(self, stmt: cst.BaseStatement):
        return self.parent(stmt)


def module_class_facts(module: cst.Module, module_name: str, is_package: bool = False,
                       known: Optional[Mapping[str, ClassFact]] = None) -> Dict[str, ClassFact]:
    """Class facts of one module keyed by absolute qualified name, for project indexes."""
    a = Analysis(module, ProjectContext(module_name, is_package, dict(known or {})))
    out = {}
    for qual, fact in a.classes.items():
        if "<locals>" in qual:
            continue
        out[f"{module_name}.{qual}" if module_name else qual] = fact
    return out
