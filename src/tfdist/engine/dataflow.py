"""Def-use facts over the analysis: where a name is bound, what a value is
derived from, and whether it was bound before or after a given statement.

Rules use these to divide the work along the data flow (slice arrays where
they and everything derived from them are final; divide a step count only
when it was not computed from already-divided data) instead of looking at
single statements. Everything here is about bindings found by the scope
walk; nothing compares source text.
"""
from __future__ import annotations

from typing import Iterator, List, Optional, Set, Tuple

import libcst as cst

from .analysis import Analysis
from .scopes import walk

def names_in(expr: cst.CSTNode) -> Iterator[cst.Name]:
    """Names *read* in expr (attribute names and keyword names excluded)."""
    for n in walk(expr):
        if isinstance(n, cst.Name):
            yield n


def all_binding_statements(a: Analysis, name: cst.Name, params: Optional[List[cst.Param]] = None,
                           skip=None) -> Optional[List[cst.BaseStatement]]:
    """Every statement binding name (plain, annotated, augmented or tuple
    assignments), source order; None when a binding is anything else. With ``params`` a list,
    parameters binding name are collected there instead of refused; bindings
    ``skip(origin)`` holds for are left out."""
    out = []
    for origin, _ in a.assigned_values(name, reaching=False):
        if params is not None and isinstance(origin, cst.Param):
            params.append(origin)
            continue
        if skip is not None and skip(origin):
            continue
        node = origin
        while node is not None and not isinstance(node, cst.BaseSmallStatement):
            if isinstance(node, (cst.Param, cst.CompFor, cst.For, cst.With, cst.WithItem, cst.BaseCompoundStatement)):
                return None
            node = a.parent(node)
        if not isinstance(node, (cst.Assign, cst.AnnAssign, cst.AugAssign)):
            return None
        stmt = a.statement_of(node)
        if not isinstance(stmt, cst.SimpleStatementLine):
            return None
        if stmt not in out:
            out.append(stmt)
    out.sort(key=lambda s: (a.line(s), a.col(s)))
    return out or (out if params else None)


def value_of_statement(stmt: cst.BaseStatement) -> Optional[cst.BaseExpression]:
    if not isinstance(stmt, cst.SimpleStatementLine):
        return None  # a loop filling a list, ...: no value of its own
    small = stmt.body[0] if len(stmt.body) == 1 else None
    if isinstance(small, (cst.Assign, cst.AnnAssign, cst.AugAssign)):
        return small.value  # x /= 255.0: what x is combined with (x itself is the name's own)
    return None


def is_inside(a: Analysis, node: cst.CSTNode, container: cst.CSTNode) -> bool:
    return any(x is container for x in a.ancestors(node))


def depends_on(a: Analysis, expr: cst.CSTNode, targets: Set[str], depth: int = 0,
               seen: Optional[Set[int]] = None) -> bool:
    """expr reads one of targets, directly or through the values bound to the names it reads."""
    seen = seen if seen is not None else set()
    if depth > 10:
        return False
    for n in names_in(expr):
        if n.value in targets:
            return True
        for origin, value in a.assigned_values(n):
            if value is None and isinstance(origin, cst.Name):
                value = element_value(a, origin) or assigned_by(a, origin)  # n, d = x.shape
            if value is not None and id(value) not in seen:
                seen.add(id(value))
                if depends_on(a, value, targets, depth + 1, seen):
                    return True
    return False


def after(a: Analysis, node: cst.CSTNode, stmt: cst.CSTNode) -> bool:
    """node starts on a line after stmt ends (source order)."""
    return a.line(node) > a.end_line(stmt)


def module_statement(a: Analysis, node: cst.CSTNode) -> cst.CSTNode:
    """The module-level statement node is part of (a def or class for code
    in one): what runs it, as far as the module's own order goes."""
    top = node
    while a.parent(top) is not None and not isinstance(a.parent(top), cst.Module):
        top = a.parent(top)
    return top


def outermost_loop(a: Analysis, node: cst.CSTNode) -> Optional[cst.CSTNode]:
    """The outermost ``for``/``while`` around node within its function (or
    class body, or module): where a step loop's per-epoch data is bound."""
    found = None
    for anc in a.ancestors(node):
        if isinstance(anc, (cst.FunctionDef, cst.ClassDef)):
            break
        if isinstance(anc, (cst.For, cst.While)):
            found = anc
    return found


def runs_once_outside_loops(a: Analysis, node: cst.CSTNode, depth: int = 0) -> bool:
    """node certainly runs, and in no ``for``/``while``: not in one of its
    own, and -- in a function -- the function is called, and every call of
    it runs outside loops too (followed up to a few callers). False when
    tfdist cannot tell (a function no call of which it sees: a method, or
    one another module calls)."""
    if outermost_loop(a, node) is not None:
        return False
    fdef = a.enclosing_function(node)
    if fdef is None:
        return True
    if depth > 4:
        return False
    sites = [site for site in a.calls if fdef in callees(a, site)]
    return bool(sites) and all(runs_once_outside_loops(a, site, depth + 1) for site in sites)


def sized_after(a: Analysis, expr: cst.CSTNode, targets: Set[str], point: cst.CSTNode,
                depth: int = 0, seen: Optional[Set[int]] = None) -> Tuple[bool, bool]:
    """(reaches a target as bound after point, reaches one as bound at or before point).

    Tells a count derived from arrays *after* they were divided (it is
    already a per-rank count) from one derived from the full arrays
    (``n = len(data)`` computed before the slicing point).
    """
    seen = seen if seen is not None else set()
    late = early = False
    if depth > 10:
        return late, early
    for n in names_in(expr):
        if n.value in targets:
            if after(a, n, point):
                late = True
            else:
                early = True
            continue
        for origin, value in a.assigned_values(n):
            if value is None and isinstance(origin, cst.Name):
                value = element_value(a, origin) or assigned_by(a, origin)  # N, D = x.shape: sized from x
            if value is None or id(value) in seen:
                continue
            seen.add(id(value))
            if not depends_on(a, value, targets):
                continue
            if after(a, origin, point):
                l2, e2 = sized_after(a, value, targets, point, depth + 1, seen)
                late |= l2
                early |= e2
            else:
                early = True
    return late, early


def callees(a: Analysis, call: cst.Call) -> List[cst.FunctionDef]:
    """The functions of this module a call runs: a local function by name,
    or a method of a user class (``self.step()``, ``trainer.step()``)."""
    func = call.func
    if isinstance(func, cst.Name):
        return a.local_functions(func)
    methods = getattr(a, "methods_called", None)
    return methods(call) if methods is not None else []


def reaches(a: Analysis, node: cst.CSTNode, found, seen: Optional[Set[int]] = None) -> bool:
    """Does ``found(node)`` hold for node, or for the body of a function of
    this module that node calls (transitively)?"""
    seen = seen if seen is not None else set()
    if found(node):
        return True
    for c in walk(node):
        if not isinstance(c, cst.Call):
            continue
        for f in callees(a, c):
            if id(f) not in seen:
                seen.add(id(f))
                if reaches(a, f.body, found, seen):
                    return True
    return False


def element_value(a: Analysis, target: cst.Name) -> Optional[cst.BaseExpression]:
    """The value a name gets in a tuple assignment with a tuple value:
    ``features[order]`` for ``x`` in ``x, y = features[order], targets[order]``."""
    element = a.parent(target)
    tup = a.parent(element) if isinstance(element, cst.Element) else None
    assign_target = a.parent(tup) if isinstance(tup, (cst.Tuple, cst.List)) else None
    assign = a.parent(assign_target) if isinstance(assign_target, cst.AssignTarget) else None
    if not isinstance(assign, cst.Assign) or len(assign.targets) != 1:
        return None
    value = assign.value
    if not isinstance(value, (cst.Tuple, cst.List)) or len(value.elements) != len(tup.elements):
        return None
    if any(isinstance(e, cst.StarredElement) for e in (*tup.elements, *value.elements)):
        return None
    index = next(i for i, e in enumerate(tup.elements) if e is element)
    return value.elements[index].value


def assigned_by(a: Analysis, target: cst.CSTNode) -> Optional[cst.BaseExpression]:
    """The whole value of the assignment a target name is part of
    (``draw()`` for ``x`` in ``x, y = draw()``)."""
    for anc in a.ancestors(target):
        if isinstance(anc, cst.Assign):
            return anc.value
        if isinstance(anc, (cst.BaseStatement, cst.For, cst.CompFor, cst.WithItem)):
            return None
    return None


def traced_functions(a: Analysis, tf_function: str) -> Optional[Set[int]]:
    """ids of the functions of this module TensorFlow traces into a graph
    rather than runs step by step: decorated with ``tf_function``, handed
    to it (``step = tf.function(step)``, ``tf.function(self.step)``), and the
    functions of this module those call (transitively). None when it wraps
    something not found as a function here (a lambda, another object's
    method): then no function can be said to run eagerly."""
    traced: List[cst.FunctionDef] = []
    for fdefs in a.functions.values():
        for f in fdefs:
            if any(a.is_name(d.decorator.func if isinstance(d.decorator, cst.Call) else d.decorator, {tf_function})
                   for d in f.decorators):
                traced.append(f)
    for call in a.calls:
        if not a.is_name(call.func, {tf_function}) or not call.args:
            continue
        wrapped = call.args[0].value
        if isinstance(wrapped, cst.Name):
            found = a.local_functions(wrapped)
        elif isinstance(wrapped, cst.Attribute) and isinstance(wrapped.value, cst.Name) and wrapped.value.value == "self":
            owner = next((c for c in a.ancestors(call) if isinstance(c, cst.ClassDef)), None)
            found = [f for f in walk(owner.body) if isinstance(f, cst.FunctionDef)
                     and f.name.value == wrapped.attr.value] if owner is not None else []
        else:
            found = []
        if not found:
            return None
        traced.extend(found)
    seen: Set[int] = set()
    while traced:
        f = traced.pop()
        if id(f) in seen:
            continue
        seen.add(id(f))
        for c in walk(f.body):
            if isinstance(c, cst.Call):
                traced.extend(callees(a, c))
    return seen


def runs_eagerly(a: Analysis, node: cst.CSTNode, traced: Set[int]) -> bool:
    """node is in no function of ``traced`` (traced_functions), nor in one
    defined inside such a function."""
    return not any(isinstance(f, cst.FunctionDef) and id(f) in traced for f in a.ancestors(node))
