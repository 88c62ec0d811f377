"""Which bindings of a name reach a use: reaching definitions over
straight-line code.

The scope walk (:mod:`.scopes`) answers, for a use, every binding of its
name made earlier in its scope. A notebook (or a script) that rebinds
``model``, ``callbacks``, ``optimizer`` or ``train_dataset`` cell after cell
then looks as if each use could mean any of them. Executed in order, a
use sees only the last binding run before it: this module follows the
statements back from the use and stops at the first statement that
certainly rebinds the name. A cell is a run of module-level statements,
so cell order is execution order.

It is conservative, never a guess:

* a binding inside an ``if``, ``for``, ``while``, ``try`` or ``match`` met on
  the way back *may* have run: it is kept, together with what was bound
  before it; the body of a ``with`` runs whole, like straight-line code;
* a use inside a loop also sees every binding of the loop body (the next
  iteration runs after them);
* a use inside a ``try``, an ``except``/``finally``/loop ``else`` or a
  ``match`` case, a name bound by a walrus, a name some function rebinds
  through ``global``/``nonlocal``: not decided here (``None``; the caller
  keeps every binding);
* a function body reading a global sees the binding live when it is
  *called*: decided from its calls when module-level code alone calls it,
  directly; other uses in another scope than the bindings' are not
  decided here.
"""
from __future__ import annotations

from typing import Dict, List, Optional, Sequence, Set

import libcst as cst

from .scopes import Binding, ModuleScopes

# Statements after which the name is certainly bound by the statement itself.
_DEFINITE_SMALL = (cst.Assign, cst.AnnAssign, cst.AugAssign, cst.Import, cst.ImportFrom)
# Compound statements whose bindings only *may* have run.
_MAYBE_COMPOUND = (cst.If, cst.For, cst.While, cst.Try, cst.Match) + ((cst.TryStar,) if hasattr(cst, "TryStar") else ())
# Where a use is left undecided.
_UNDECIDED_OWNERS = (cst.Try, cst.ExceptHandler, cst.Finally, cst.ClassDef, cst.Match, cst.MatchCase, cst.Lambda) + (
    (cst.TryStar, cst.ExceptStarHandler) if hasattr(cst, "TryStar") else ())


class _Undecided(Exception):
    pass


def _in_order(found: List[Binding], every: Sequence[Binding]) -> Optional[List[Binding]]:
    """The bindings found, in source order (as ``every`` lists them); None for none."""
    if not found:
        return None
    order = {id(b): i for i, b in enumerate(every)}
    return sorted(found, key=lambda b: order[id(b)])


class Reaching:
    """Reaching bindings of uses, for one module's scope walk."""

    def __init__(self, scopes: ModuleScopes):
        self.scopes = scopes
        self.parents = scopes.parents
        self._ancestors: Dict[int, Set[int]] = {}
        self._cache: Dict[cst.Name, Optional[List[Binding]]] = {}
        self._frames: Dict[int, Optional[cst.CSTNode]] = {}
        self._index: Dict[int, Dict[int, int]] = {}
        self._calls: Dict[int, Optional[List[cst.Name]]] = {}  # def -> the module-level calls running it

    def _ancestor_ids(self, node: cst.CSTNode) -> Set[int]:
        found = self._ancestors.get(id(node))
        if found is None:
            found = set()
            p = self.parents.get(node)
            while p is not None:
                found.add(id(p))
                p = self.parents.get(p)
            self._ancestors[id(node)] = found
        return found

    def _inside(self, b: Binding, node: cst.CSTNode) -> bool:
        return b.node is node or id(node) in self._ancestor_ids(b.node)

    def _frame(self, node: cst.CSTNode) -> Optional[cst.CSTNode]:
        """The function, lambda, class or module whose code runs node."""
        key = id(node)
        if key not in self._frames:
            self._frames[key] = self._find_frame(node)
        return self._frames[key]

    def _find_frame(self, node: cst.CSTNode) -> Optional[cst.CSTNode]:
        p = self.parents.get(node)
        while p is not None:
            if isinstance(p, (cst.FunctionDef, cst.Lambda, cst.ClassDef, cst.Module)):
                if isinstance(p, (cst.FunctionDef, cst.ClassDef)) and (node is p.name or node in getattr(p, "decorators", ())):
                    node, p = p, self.parents.get(p)  # a def's name binds outside it
                    continue
                return p
            node, p = p, self.parents.get(p)
        return None

    def bindings(self, use: cst.Name) -> Optional[List[Binding]]:
        """The bindings of a use (a loaded Name) that can reach it, source
        order; None when this is not decided here (see the module doc)."""
        if use not in self._cache:
            self._cache[use] = None  # undecided while being decided (a function's calls may lead back here)
            self._cache[use] = self._bindings(use)
        return self._cache[use]

    def read_by_augmented(self, target: cst.Name) -> Optional[List[Binding]]:
        """The bindings an augmented assignment's target reads before it
        binds the name anew (``x += r`` reads the ``x`` of the statements
        run before it), source order; None when not decided here."""
        aug = self.parents.get(target)
        if not (isinstance(aug, cst.AugAssign) and aug.target is target):
            return None
        if target not in self._cache:
            self._cache[target] = None
            self._cache[target] = self._bindings(target, read=True)
        return self._cache[target]

    def _bindings(self, use: cst.Name, read: bool = False) -> Optional[List[Binding]]:
        """``read``: use is an augmented assignment's target, read as a use is."""
        scope = self.scopes.scope_of.get(use)
        if scope is None or not (read or use in self.scopes.access_index) or scope.kind not in ("module", "function"):
            return None
        if use.value in scope.global_decls or use.value in scope.nonlocal_decls:
            return None
        every = scope.bindings.get(use.value, [])
        if not every and scope.kind == "function":
            return self._global_at_calls(use, scope)
        if len(every) <= 1:
            return None
        frame = self._frame(use)
        for b in every:
            if b.node is None or isinstance(b.node, cst.Name) and isinstance(self.parents.get(b.node), cst.NamedExpr):
                return None
            if self._frame(b.node) is not frame:  # a parameter's frame is its function
                return None  # bound by another function (global / nonlocal)
        try:
            out = self._walk(use, every)
        except _Undecided:
            return None
        return _in_order(out, every)

    def _global_at_calls(self, use: cst.Name, scope) -> Optional[List[Binding]]:
        """A module function reading a global (``optimizer`` in ``def
        run_optimization(x, y)``): the bindings reaching the calls that run
        it -- when it is called only directly from module-level code (a
        notebook's cells) by the name this very ``def`` binds there, and
        every binding of the global is made by module-level code. None
        otherwise (called from other functions, passed on, rebound through
        ``global``)."""
        module = self.scopes.module_scope
        fdef = self._frame(use)
        if scope.parent is not module or not isinstance(fdef, cst.FunctionDef) \
                or not isinstance(self.parents.get(fdef), cst.Module):
            return None
        every = module.bindings.get(use.value, [])
        if len(every) <= 1 or any(b.node is None or not isinstance(self._frame(b.node), cst.Module) for b in every):
            return None
        calls = self._module_calls(fdef)
        if calls is None:
            return None
        out: List[Binding] = []
        for ref in calls:
            try:
                out += [b for b in self._walk(ref, every) if b not in out]
            except _Undecided:
                return None
        return _in_order(out, every)

    def _module_calls(self, fdef: cst.FunctionDef) -> Optional[List[cst.Name]]:
        """The names calling fdef, when all its uses are direct calls by
        module-level code of this very def; None otherwise. Once per def:
        each global its body reads asks."""
        key = id(fdef)
        if key not in self._calls:
            self._calls[key] = self._find_module_calls(fdef)
        return self._calls[key]

    def _find_module_calls(self, fdef: cst.FunctionDef) -> Optional[List[cst.Name]]:
        calls = []
        for s in self.scopes._all_scopes:
            for ref in s.accesses.get(fdef.name.value, ()):
                bound = self.bindings(ref) or self.scopes.lookup(ref)
                if not any(b.node is fdef for b in bound):
                    continue
                call = self.parents.get(ref)
                if len(bound) != 1 or not (isinstance(call, cst.Call) and call.func is ref) \
                        or not isinstance(self._frame(ref), cst.Module):
                    return None  # passed on, called from a function, or maybe another def of the name
                calls.append(ref)
        return calls

    # ------------------------------------------------------------ the walk
    def _walk(self, use: cst.Name, every: Sequence[Binding]) -> List[Binding]:
        out: List[Binding] = []
        node: cst.CSTNode = use
        while True:
            parent = self.parents.get(node)
            if parent is None:
                return out
            if isinstance(parent, (cst.Module, cst.IndentedBlock, cst.SimpleStatementLine, cst.SimpleStatementSuite)):
                positions = self._index.get(id(parent))
                if positions is None:
                    positions = self._index[id(parent)] = {id(c): i for i, c in enumerate(parent.body)}
                index = positions[id(node)]
                if self._back(list(parent.body)[:index], every, out):
                    return out
            elif isinstance(parent, _UNDECIDED_OWNERS):
                raise _Undecided()
            elif isinstance(parent, (cst.For, cst.While)):
                if node is parent.orelse:
                    raise _Undecided()
                if node is parent.body:
                    if isinstance(parent, cst.For) and any(self._inside(b, parent.target) for b in every):
                        out += [b for b in every if self._inside(b, parent.target)]
                        return out  # the loop target: bound before each iteration
                    # the next iteration sees every binding of the loop
                    out += [b for b in every if self._inside(b, parent) and b not in out]
                elif any(self._inside(b, parent) for b in every):
                    raise _Undecided()  # a use in the header of a loop binding the name
            elif isinstance(parent, cst.If):
                if node is parent.test and any(self._inside(b, parent) for b in every):
                    raise _Undecided()
            elif isinstance(parent, cst.With):
                if node is parent.body:
                    items = [b for b in every if any(self._inside(b, item) for item in parent.items)]
                    out += [b for b in items if b not in out]
                    if items:
                        return out  # ``with ... as name`` binds it before the body runs, always
                elif any(self._inside(b, parent) for b in every):
                    raise _Undecided()
            elif isinstance(parent, cst.FunctionDef):
                if node is parent.body:
                    out += [b for b in every if isinstance(b.node, cst.Param) and self._inside(b, parent.params)]
                    return out
                raise _Undecided()  # decorators, defaults: evaluated outside (another frame)
            node = parent

    def _back(self, statements: Sequence[cst.CSTNode], every: Sequence[Binding], out: List[Binding]) -> bool:
        """Scan statements (a block's, or a line's small statements) from the
        last to the first, adding the bindings that may reach past them;
        True when one certainly binds the name (nothing earlier reaches)."""
        for stmt in reversed(statements):
            inside = [b for b in every if self._inside(b, stmt)]
            if not inside:
                continue
            if isinstance(stmt, (cst.SimpleStatementLine, cst.SimpleStatementSuite)):
                if self._back(stmt.body, every, out):
                    return True
            elif isinstance(stmt, _DEFINITE_SMALL) and not (isinstance(stmt, cst.AnnAssign) and stmt.value is None) \
                    or isinstance(stmt, (cst.FunctionDef, cst.ClassDef)):
                out += [b for b in inside if b not in out]
                return True
            elif isinstance(stmt, cst.With):
                body = stmt.body.body if isinstance(stmt.body, (cst.IndentedBlock, cst.SimpleStatementSuite)) else ()
                if self._back(body, every, out):
                    return True
                out += [b for b in inside if b not in out]
                if any(self._inside(b, item) for b in inside for item in stmt.items):
                    return True  # ``with ... as name`` binds it before the body runs, always
            else:  # if / for / while / try / match, and anything else: may have run
                out += [b for b in inside if b not in out]
        return False
