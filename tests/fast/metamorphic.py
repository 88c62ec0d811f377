"""Variants of a script that keep its meaning and change its syntax, each
with the map from the original's lines to the variant's (for
tests/fast/test_metamorphic.py).

* ``alias``: an imported name bound under another name everywhere it is
  used (``import tensorflow as tf`` -> ``as tf_v``; ``from tensorflow.keras
  import layers`` -> ``import layers as layers_v``): lines unchanged.
* ``comments``: a comment line before every top-level statement: each line
  moves down by the statements that start at or before it.
* ``main``: the statements after the last import, function and class moved
  into ``def main():``, run under ``if __name__ == "__main__":`` -- only
  where no function or class reads a name those statements bind (else the
  meaning would change): each moved line moves down by one.

* ``augmented``: ``x = x + y`` written ``x += y`` and ``x += y`` written
  ``x = x + (y)`` (``+ - * / //``, a name updated by itself), anywhere:
  lines unchanged.
* ``temporaries``: the first number literal a module-level statement passes
  to a call (a learning rate, a batch size, epochs) bound to a name of its
  own on the line before (``rate_v1 = 1e-3`` then ``Adam(rate_v1)``): each
  line moves down by the temporaries before it; a finding on a temporary's
  line counts as its statement's (the conversion may scale the number where
  it is bound).

* ``cells``: the script as a notebook: the imports in the first cell, then
  every top-level statement a cell of its own (converted as a notebook; a
  block a conversion opens must close in the cell that opened it): a line's
  place in the module tfdist joins the cells into (a marker line between two
  cells, no blank lines at a cell's end).

* ``chains``: a method chain assigned to a name, ``ds = make(...).shuffle(n).batch(b)``, written one
  call a statement (``ds = make(...)``, ``ds = ds.shuffle(n)``, ``ds = ds.batch(b)``), anywhere, where
  no call of the chain after its first reads that name (else the meaning would change) and the
  statement is one line: each line moves down by the statements added before it; a finding on an
  added line counts as its statement's first line.

* ``inlined``: a name a module-level statement binds to a call and the next statement reads once
  (and nothing else reads) given that call in its place (``optimizer = Adam(1e-3)`` then
  ``model.compile(optimizer=optimizer)`` -> ``model.compile(optimizer=Adam(1e-3))``), both one line,
  the read not inside a function or lambda: the binding line goes, each later line moves up by the
  bindings gone before it; a finding on a binding counts on the line that now holds its call.

* ``qualified``: names imported from a module (``from tensorflow.keras import layers``, ``from
  keras.layers import Dense``) read through the module instead (``import tensorflow.keras as
  keras_q``, ``keras_q.layers``), every one-line ``from`` import of the module's top level whose
  names are only read: lines unchanged.

A variant is ``None`` where its transformation does not apply to the script
(or would change its meaning).
"""
from __future__ import annotations

from dataclasses import dataclass
from typing import Callable, Dict, Optional

import libcst as cst
import nbformat
from libcst.metadata import MetadataWrapper, PositionProvider, ScopeProvider, GlobalScope


@dataclass
class Variant:
    kind: str
    text: str
    line_map: Callable[[int], int]
    #: a variant's line -> the variant line its findings count on (a temporary's -> its statement's)
    fold: Callable[[int], int] = lambda line: line
    #: text is a notebook (.ipynb JSON), converted as one
    notebook: bool = False


def _imports_end(module: cst.Module) -> int:
    """Index of the first statement after the leading imports/docstring."""
    i = 0
    for i, stmt in enumerate(module.body):
        if isinstance(stmt, cst.SimpleStatementLine) and all(
                isinstance(s, (cst.Import, cst.ImportFrom)) or (isinstance(s, cst.Expr) and isinstance(
                    s.value, (cst.SimpleString, cst.ConcatenatedString))) for s in stmt.body):
            continue
        return i
    return len(module.body)


# ---------------------------------------------------------------- alias
class _Rename(cst.CSTTransformer):
    def __init__(self, old: str, new: str):
        self.old, self.new = old, new
        self.skip = set()

    def visit_Attribute(self, node):
        self.skip.add(id(node.attr))

    def visit_Arg(self, node):
        if node.keyword is not None:
            self.skip.add(id(node.keyword))

    def visit_ImportAlias(self, node):
        return False  # rebound by leave_ImportAlias

    def leave_ImportAlias(self, original, updated):
        bound = original.asname.name.value if original.asname else None
        if bound == self.old:
            return updated.with_changes(asname=cst.AsName(cst.Name(self.new)))
        if bound is None and isinstance(original.name, cst.Name) and original.name.value == self.old:
            return updated.with_changes(asname=cst.AsName(cst.Name(self.new)))
        return updated

    def leave_Name(self, original, updated):
        if original.value == self.old and id(original) not in self.skip:
            return updated.with_changes(value=self.new)
        return updated


def alias(src: str) -> Optional[Variant]:
    module = cst.parse_module(src)
    bound = []
    for stmt in module.body:
        for small in getattr(stmt, "body", []) if isinstance(stmt, cst.SimpleStatementLine) else []:
            if isinstance(small, cst.Import):
                bound += [a.asname.name.value for a in small.names if a.asname]
            elif isinstance(small, cst.ImportFrom) and not isinstance(small.names, cst.ImportStar):
                bound += [a.asname.name.value if a.asname else a.name.value for a in small.names
                          if isinstance(a.name, cst.Name)]
    params = {p.name.value for n in _walk(module) if isinstance(n, cst.Parameters)
              for p in list(n.params) + list(n.kwonly_params) + list(n.posonly_params)}
    for old in bound:
        new = old + "_v"
        if old in params or new in src or old.startswith("_"):
            continue
        return Variant("alias", module.visit(_Rename(old, new)).code, lambda line: line)
    return None


# ------------------------------------------------------------- comments
def comments(src: str) -> Optional[Variant]:
    module = cst.parse_module(src)
    wrapper = MetadataWrapper(module, unsafe_skip_copy=True)
    positions = wrapper.resolve(PositionProvider)
    module = wrapper.module
    starts = sorted(positions[s].start.line for s in module.body)
    body = [s.with_changes(leading_lines=list(s.leading_lines) + [cst.EmptyLine(comment=cst.Comment(
        "# (a comment the variant adds)"))]) for s in module.body]
    text = module.with_changes(body=body).code
    return Variant("comments", text, lambda line: line + sum(1 for s in starts if s <= line))


# ----------------------------------------------------------------- main
def main(src: str) -> Optional[Variant]:
    module = cst.parse_module(src)
    last = max([i for i, s in enumerate(module.body) if isinstance(s, (cst.FunctionDef, cst.ClassDef)) or (
        isinstance(s, cst.SimpleStatementLine) and any(isinstance(b, (cst.Import, cst.ImportFrom)) for b in s.body))]
               + [_imports_end(module) - 1])
    tail = list(module.body[last + 1:])
    if not tail or "main" in src or "global " in src or "nonlocal " in src or "__name__" in src:
        return None
    wrapper = MetadataWrapper(module, unsafe_skip_copy=True)
    scopes = wrapper.resolve(ScopeProvider)
    positions = wrapper.resolve(PositionProvider)
    module = wrapper.module
    tail = list(module.body[last + 1:])
    global_scope = next(s for s in scopes.values() if isinstance(s, GlobalScope))
    tail_ids = set()
    for stmt in tail:
        tail_ids |= {id(n) for n in _walk(stmt)}
    for assignment in global_scope.assignments:
        if id(assignment.node) not in tail_ids:
            continue
        if any(scopes.get(access.node) is not global_scope for access in assignment.references):
            return None  # a function or class reads it: moving it would change what they see
    first = positions[tail[0]].start.line
    moved = [s for s in tail]
    leading = moved[0].leading_lines
    moved[0] = moved[0].with_changes(leading_lines=())
    define = cst.FunctionDef(name=cst.Name("main"), params=cst.Parameters(),
                             body=cst.IndentedBlock(body=moved), leading_lines=leading)
    call = cst.parse_statement('if __name__ == "__main__":\n    main()\n')
    text = module.with_changes(body=list(module.body[:last + 1]) + [define, call]).code
    return Variant("main", text, lambda line: line + 1 if line >= first else line)


# ------------------------------------------------------------ augmented
_OPERATORS = {cst.Add: cst.AddAssign, cst.Subtract: cst.SubtractAssign, cst.Multiply: cst.MultiplyAssign,
              cst.Divide: cst.DivideAssign, cst.FloorDivide: cst.FloorDivideAssign}
_BACK = {v: k for k, v in _OPERATORS.items()}


class _Augment(cst.CSTTransformer):
    def __init__(self):
        self.count = 0

    def leave_Assign(self, original, updated):
        value = updated.value
        if (len(updated.targets) == 1 and isinstance(updated.targets[0].target, cst.Name)
                and isinstance(value, cst.BinaryOperation) and type(value.operator) in _OPERATORS
                and isinstance(value.left, cst.Name) and value.left.value == updated.targets[0].target.value):
            self.count += 1
            return cst.AugAssign(target=updated.targets[0].target, operator=_OPERATORS[type(value.operator)](),
                                 value=value.right)
        return updated

    def leave_AugAssign(self, original, updated):
        if isinstance(updated.target, cst.Name) and type(updated.operator) in _BACK:
            self.count += 1
            right = updated.value.with_changes(lpar=[cst.LeftParen()], rpar=[cst.RightParen()]) \
                if isinstance(updated.value, cst.BinaryOperation) else updated.value
            return cst.Assign(targets=[cst.AssignTarget(updated.target)], value=cst.BinaryOperation(
                left=cst.Name(updated.target.value), operator=_BACK[type(updated.operator)](), right=right))
        return updated


def augmented(src: str) -> Optional[Variant]:
    transform = _Augment()
    text = cst.parse_module(src).visit(transform).code
    return Variant("augmented", text, lambda line: line) if transform.count else None


# ---------------------------------------------------------- temporaries
def temporaries(src: str) -> Optional[Variant]:
    module = cst.parse_module(src)
    wrapper = MetadataWrapper(module, unsafe_skip_copy=True)
    positions = wrapper.resolve(PositionProvider)
    module = wrapper.module
    body, added = [], []  # added: original lines of the statements given a temporary
    for stmt in module.body:
        literal = None
        if isinstance(stmt, cst.SimpleStatementLine) and len(stmt.body) == 1:
            literal = next((arg.value for n in _walk(stmt) if isinstance(n, cst.Call) for arg in n.args
                            if isinstance(arg.value, (cst.Integer, cst.Float)) and arg.star == ""), None)
        if literal is None:
            body.append(stmt)
            continue
        name = f"value_v{len(added) + 1}"
        if name in src:
            return None
        added.append(positions[stmt].start.line)
        new = stmt.visit(_Replace(literal, cst.Name(name)))
        temp = cst.SimpleStatementLine([cst.Assign(targets=[cst.AssignTarget(cst.Name(name))], value=literal)],
                                       leading_lines=stmt.leading_lines)
        body += [temp, new.with_changes(leading_lines=())]
    if not added:
        return None
    text = module.with_changes(body=body).code
    shifted = [line + i + 1 for i, line in enumerate(added)]  # each statement's line in the variant

    def line_map(line):
        return line + sum(1 for s in added if s <= line)

    return Variant("temporaries", text, line_map, lambda line: line + 1 if line + 1 in shifted else line)


class _Replace(cst.CSTTransformer):
    def __init__(self, old, new):
        self.old, self.new = old, new

    def on_leave(self, original, updated):
        return self.new if original is self.old else updated


def _walk(node):
    stack = [node]
    while stack:
        n = stack.pop()
        yield n
        stack.extend(n.children)


# ---------------------------------------------------------------- cells
def cells(src: str) -> Optional[Variant]:
    module = cst.parse_module(src)
    wrapper = MetadataWrapper(module, unsafe_skip_copy=True)
    positions = wrapper.resolve(PositionProvider)
    module = wrapper.module
    starts = [positions[s.decorators[0] if getattr(s, "decorators", None) else s].start.line
              for s in module.body[_imports_end(module):]]
    cuts = [line for line in starts if line > 1]
    if not cuts:
        return None
    lines = src.splitlines(keepends=True)
    bounds = [1] + cuts + [len(lines) + 1]
    chunks = [lines[a - 1:b - 1] for a, b in zip(bounds, bounds[1:])]
    for chunk in chunks:  # a cell ends at its last line of code or comment
        while chunk and not chunk[-1].strip():
            chunk.pop()
    starts, line = [], 1  # each cell's first line in the module tfdist joins them into (a marker between two)
    for chunk in chunks:
        starts.append(line)
        line += len(chunk) + 1
    nb = nbformat.v4.new_notebook(
        cells=[nbformat.v4.new_code_cell("".join(chunk).rstrip("\n")) for chunk in chunks],
        metadata={"kernelspec": {"name": "python3", "display_name": "Python 3", "language": "python"},
                  "language_info": {"name": "python"}})

    def line_map(line):
        cell = max(i for i, bound in enumerate(bounds[:-1]) if bound <= line)
        return starts[cell] + line - bounds[cell]

    return Variant("cells", nbformat.writes(nb), line_map, notebook=True)


# ---------------------------------------------------------------- chains
def _links(value: cst.BaseExpression):
    """[root, call1, call2, ...] of a chain of method calls ``root.m1(...).m2(...)`` (calls outermost
    last); None unless at least two calls are chained on the root."""
    calls = []
    while isinstance(value, cst.Call) and isinstance(value.func, cst.Attribute):
        calls.append(value)
        value = value.func.value
    if len(calls) < 2 or not isinstance(calls[-1].func.value, (cst.Call, cst.Name, cst.Attribute)):
        return None
    return calls[::-1]  # the innermost call (on the root) first


class _SplitChains(cst.CSTTransformer):
    METADATA_DEPENDENCIES = (PositionProvider,)

    def __init__(self):
        self.added = []  # (original line, statements added after it)

    def leave_SimpleStatementLine(self, original, updated):
        if len(updated.body) != 1 or not isinstance(updated.body[0], cst.Assign):
            return updated
        assign = updated.body[0]
        if len(assign.targets) != 1 or not isinstance(assign.targets[0].target, cst.Name):
            return updated
        pos = self.get_metadata(PositionProvider, original)
        if pos.start.line != pos.end.line:
            return updated
        name = assign.targets[0].target.value
        calls = _links(assign.value)
        if calls is None:
            return updated
        later = [arg for call in calls[1:] for arg in call.args]
        if any(isinstance(n, cst.Name) and n.value == name for arg in later for n in _walk(arg)):
            return updated  # a later call reads the name: split, it would read the chain's value so far
        first = updated.with_changes(body=[assign.with_changes(value=calls[0])], trailing_whitespace=cst.TrailingWhitespace())
        rest = [cst.SimpleStatementLine([cst.Assign(targets=[cst.AssignTarget(cst.Name(name))], value=call.with_changes(
            func=call.func.with_changes(value=cst.Name(name))))]) for call in calls[1:]]
        rest[-1] = rest[-1].with_changes(trailing_whitespace=updated.trailing_whitespace)
        self.added.append((pos.start.line, len(rest)))
        return cst.FlattenSentinel([first, *rest])


def chains(src: str) -> Optional[Variant]:
    wrapper = MetadataWrapper(cst.parse_module(src))
    transform = _SplitChains()
    text = wrapper.visit(transform).code
    if not transform.added:
        return None
    added = sorted(transform.added)

    def line_map(line):
        return line + sum(k for start, k in added if start < line)

    firsts = {line_map(start): k for start, k in added}  # a split statement's first line in the variant

    def fold(line):
        return next((first for first, k in firsts.items() if first <= line <= first + k), line)

    return Variant("chains", text, line_map, fold)


# -------------------------------------------------------------- inlined
_DEFERRED = (cst.Lambda, cst.FunctionDef, cst.ListComp, cst.SetComp, cst.DictComp, cst.GeneratorExp)


def _labels(nodes) -> set:
    """ids of the Names that are no read of a binding: an attribute's and a keyword's."""
    return {id(n.attr) for n in nodes if isinstance(n, cst.Attribute)} | \
        {id(n.keyword) for n in nodes if isinstance(n, cst.Arg) and n.keyword is not None}


def inlined(src: str) -> Optional[Variant]:
    wrapper = MetadataWrapper(cst.parse_module(src))
    positions = wrapper.resolve(PositionProvider)
    module = wrapper.module
    labels = _labels(list(_walk(module)))
    reads: Dict[str, int] = {}  # every Name that is not an attribute's or a keyword's label
    for node in _walk(module):
        if isinstance(node, cst.Name) and id(node) not in labels:
            reads[node.value] = reads.get(node.value, 0) + 1
    body = list(module.body)
    chosen = {}  # index of a binding statement -> (name, its call)
    for i, (stmt, nxt) in enumerate(zip(body, body[1:])):
        if i in chosen or i - 1 in chosen or not (
                isinstance(stmt, cst.SimpleStatementLine) and isinstance(nxt, cst.SimpleStatementLine)
                and len(stmt.body) == 1 and isinstance(stmt.body[0], cst.Assign)):
            continue
        assign = stmt.body[0]
        if len(assign.targets) != 1 or not isinstance(assign.targets[0].target, cst.Name) \
                or not isinstance(assign.value, cst.Call):
            continue
        name = assign.targets[0].target.value
        one_line = all(positions[s].start.line == positions[s].end.line for s in (stmt, nxt))
        uses = [n for n in _walk(nxt) if isinstance(n, cst.Name) and n.value == name and id(n) not in labels]
        deferred = any(isinstance(n, _DEFERRED) for n in _walk(nxt))
        if one_line and reads.get(name) == 2 and len(uses) == 1 and not deferred \
                and not _is_binding(nxt, uses[0]):
            chosen[i] = (name, assign.value, uses[0])
    if not chosen:
        return None
    out, gone, target = [], [], {}  # gone: original lines of the bindings; target: binding line -> use line
    for i, stmt in enumerate(body):
        if i in chosen:
            gone.append(positions[stmt].start.line)
            target[positions[stmt].start.line] = positions[body[i + 1]].start.line
            continue
        if i - 1 in chosen:
            _name, call, use = chosen[i - 1]
            prev = body[i - 1]
            stmt = stmt.visit(_Replace(use, call)).with_changes(
                leading_lines=list(prev.leading_lines) + list(stmt.leading_lines))
        out.append(stmt)
    text = module.with_changes(body=out).code

    def line_map(line):
        line = target.get(line, line)
        return line - sum(1 for g in gone if g < line)

    return Variant("inlined", text, line_map)


def _is_binding(stmt, name) -> bool:
    """The name is bound (assigned, a target) in the statement, not read."""
    for node in _walk(stmt):
        if isinstance(node, (cst.AssignTarget, cst.AugAssign, cst.AnnAssign)) and node.target is name:
            return True
    return False


# ------------------------------------------------------------ qualified
class _Qualify(cst.CSTTransformer):
    """Each read of a name in ``names`` becomes ``<module alias>.<name>``."""

    def __init__(self, names: Dict[str, str], labels: set, imports: Dict[int, str]):
        self.names, self.labels, self.imports = names, labels, imports

    def leave_SimpleStatementLine(self, original, updated):
        alias = self.imports.get(id(original))
        if alias is None:
            return updated
        module = cst.parse_expression(_dotted(original.body[0].module))
        return updated.with_changes(body=[cst.Import(names=[cst.ImportAlias(module, asname=cst.AsName(cst.Name(alias)))])])

    def leave_Name(self, original, updated):
        alias = self.names.get(original.value)
        if alias is None or id(original) in self.labels:
            return updated
        return cst.Attribute(value=cst.Name(alias), attr=cst.Name(original.value))


def _dotted(node) -> str:
    return node.value if isinstance(node, cst.Name) else f"{_dotted(node.value)}.{node.attr.value}"


def qualified(src: str) -> Optional[Variant]:
    wrapper = MetadataWrapper(cst.parse_module(src))
    positions = wrapper.resolve(PositionProvider)
    module = wrapper.module
    nodes = list(_walk(module))
    labels = _labels(nodes) | {id(x) for n in nodes if isinstance(n, (cst.Import, cst.ImportFrom)) for x in _walk(n)}
    bound = {t.value for n in nodes for t in _bound_names(n)}
    names, imports = {}, {}
    for stmt in module.body:
        if not (isinstance(stmt, cst.SimpleStatementLine) and len(stmt.body) == 1
                and isinstance(stmt.body[0], cst.ImportFrom)):
            continue
        imp = stmt.body[0]
        if imp.relative or imp.module is None or isinstance(imp.names, cst.ImportStar) \
                or positions[stmt].start.line != positions[stmt].end.line:
            continue
        dotted = _dotted(imp.module)
        if dotted == "__future__":
            continue
        taken = [a.asname.name.value if a.asname else a.name.value for a in imp.names]
        if any(a.asname for a in imp.names) or any(n in bound or n in names for n in taken):
            continue
        alias = dotted.split(".")[-1] + "_q"
        if alias in src:
            continue
        imports[id(stmt)] = alias
        names.update({n: alias for n in taken})
    if not imports:
        return None
    text = module.visit(_Qualify(names, labels, imports)).code
    return Variant("qualified", text, lambda line: line)


def _bound_names(node):
    """The Names a node binds other than by import (targets, parameters, definitions, global)."""
    if isinstance(node, (cst.AssignTarget, cst.AugAssign, cst.AnnAssign, cst.For, cst.CompFor)):
        return [n for n in _walk(node.target) if isinstance(n, cst.Name)]
    if isinstance(node, cst.NamedExpr):
        return [node.target] if isinstance(node.target, cst.Name) else []
    if isinstance(node, (cst.Param, cst.FunctionDef, cst.ClassDef)):
        return [node.name]
    if isinstance(node, cst.AsName) and isinstance(node.name, cst.Name):
        return [node.name]
    if isinstance(node, (cst.Global, cst.Nonlocal)):
        return [n.name for n in node.names]
    if isinstance(node, cst.Del):
        return [n for n in _walk(node.target) if isinstance(n, cst.Name)]
    return []


TRANSFORMS: Dict[str, Callable[[str], Optional[Variant]]] = {
    "alias": alias, "comments": comments, "main": main, "augmented": augmented, "temporaries": temporaries,
    "cells": cells, "chains": chains, "inlined": inlined, "qualified": qualified}
