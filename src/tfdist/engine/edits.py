"""Scheduled edits, applied in one pass so untouched code round-trips exactly.

Rules never build a new module; they record what should change, keyed on the
*original* CST nodes: replace a node (a function of its already-updated
form, so edits of a node and of its children compose), insert statements
before/after a statement, or put a statement under a guard. The applier
walks the tree once, and only down the paths that lead to an edit: the
rest of the tree is reused as it is, not rebuilt.
"""
from __future__ import annotations

from collections import defaultdict
from typing import Callable, Dict, List, Mapping, Optional, Set

import libcst as cst

Replacement = Callable[[cst.CSTNode], cst.CSTNode]


class EditPlan:
    def __init__(self) -> None:
        self.replacements: Dict[cst.CSTNode, List[Replacement]] = defaultdict(list)
        self.before: Dict[cst.CSTNode, List[cst.BaseStatement]] = defaultdict(list)
        self.after: Dict[cst.CSTNode, List[cst.BaseStatement]] = defaultdict(list)
        # At least this many blank lines before a statement (two after a
        # class or function inserted at the top level).
        self.gap_before: Dict[cst.CSTNode, int] = {}
        self.guards: Dict[cst.CSTNode, cst.BaseExpression] = {}
        # Runs of consecutive statements of one block put in a ``with``:
        # first statement -> (last statement, the with-items).
        self.spans: Dict[cst.CSTNode, tuple] = {}
        self._in_span: Set[cst.CSTNode] = set()
        # Statements no span may contain: they separate segments of the
        # source that run apart (a notebook's cells), so a block opened in one
        # segment must close in it.
        self.barriers: Set[cst.CSTNode] = set()

    def replace(self, node: cst.CSTNode, fn: Replacement, inner: bool = False) -> None:
        """Replace node by ``fn(its updated form)``. The node's replacements
        apply in the order scheduled, each to the previous one's result;
        ``inner``: before the others (an edit of the node itself, which a
        replacement wrapping the node in more code then keeps)."""
        if inner:
            self.replacements[node].insert(0, fn)
        else:
            self.replacements[node].append(fn)

    def withdraw(self, node: cst.CSTNode, fn: Replacement) -> None:
        """Take back a replacement a rule scheduled (a later rule made the
        same edit another way)."""
        fns = self.replacements.get(node, [])
        if fn in fns:
            fns.remove(fn)
        if not fns:
            self.replacements.pop(node, None)

    def insert_before(self, stmt: cst.BaseStatement, stmts: List[cst.BaseStatement]) -> None:
        self.before[stmt].extend(stmts)

    def blank_lines_before(self, stmt: cst.BaseStatement, count: int) -> None:
        """At least ``count`` blank lines right before stmt (after anything inserted there)."""
        self.gap_before[stmt] = max(count, self.gap_before.get(stmt, 0))

    def insert_after(self, stmt: cst.BaseStatement, stmts: List[cst.BaseStatement]) -> None:
        self.after[stmt].extend(stmts)

    def guard(self, stmt: cst.BaseStatement, test: cst.BaseExpression) -> bool:
        """Put stmt under ``if test:``; False if it is guarded already."""
        if stmt in self.guards:
            return False
        self.guards[stmt] = test
        return True

    def wrap(self, stmts: List[cst.BaseStatement], items: List[cst.WithItem]) -> bool:
        """Put consecutive statements of one block in ``with items:`` -- one
        ``with`` per segment where a barrier separates them; False if one of
        them is in a span already (the caller merges spans)."""
        def build(inner, leading):
            return [cst.With(items=items, body=cst.IndentedBlock(body=inner), leading_lines=leading)]
        if any(s in self._in_span for s in stmts):
            return False
        segments: List[List[cst.BaseStatement]] = [[]]
        for s in stmts:
            if s in self.barriers:
                segments.append([])
            else:
                segments[-1].append(s)
        for segment in segments:
            if segment:
                self.regroup(segment, build)
        return True

    def regroup(self, stmts: List[cst.BaseStatement], build) -> bool:
        """Replace consecutive statements of one block, once every edit in
        them is applied, by ``build(their updated forms, the first one's
        leading lines)`` -- a list of statements (a ``with`` holding them, a
        function defined from them and its call...). False if one of them is
        in a span already, or is a barrier (the run crosses segments)."""
        if any(s in self._in_span or s in self.barriers for s in stmts):
            return False
        self.spans[stmts[0]] = (stmts[-1], build)
        self._in_span.update(stmts)
        return True

    def is_empty(self) -> bool:
        return not (self.replacements or self.before or self.after or self.guards or self.spans or self.gap_before)

    def apply(self, module: cst.Module, parents: Optional[Mapping[cst.CSTNode, cst.CSTNode]] = None) -> cst.Module:
        """The edited module. With ``parents`` (child -> parent), only the
        ancestors of edited nodes are descended into."""
        return module.visit(_Applier(self, self._paths(module, parents) if parents is not None else None))

    def _paths(self, module, parents) -> Optional[Set[cst.CSTNode]]:
        """Every strict ancestor of an edited node; None when one is not in parents."""
        on_path: Set[cst.CSTNode] = set()
        for group in (self.replacements, self.before, self.after, self.guards, self.spans, self.gap_before):
            for node in group:
                if node is module:
                    continue
                parent = parents.get(node)
                if parent is None:
                    return None  # not a node the map knows: walk everything
                while parent is not None and parent not in on_path:
                    on_path.add(parent)
                    parent = parents.get(parent)
        return on_path


def _split_leading(stmt: cst.BaseStatement):
    """(blank-line prefix, rest) of a statement's leading lines."""
    lines = list(getattr(stmt, "leading_lines", ()))
    i = 0
    while i < len(lines) and lines[i].comment is None:
        i += 1
    return lines[:i], lines[i:]


def _blank_lines_unindented(stmt):
    """A statement moved into a new block: its blank leading lines stay empty
    (not indented to the block's depth)."""
    lines = getattr(stmt, "leading_lines", None)
    if not lines:
        return stmt
    return stmt.with_changes(leading_lines=[l.with_changes(indent=False) if l.comment is None else l for l in lines])


def _has_comment(stmt) -> bool:
    return any(line.comment is not None for line in getattr(stmt, "leading_lines", ()))


class _Applier(cst.CSTTransformer):
    def __init__(self, plan: EditPlan, on_path: Optional[Set[cst.CSTNode]] = None):
        super().__init__()
        self.plan = plan
        self.on_path = on_path

    def on_visit(self, node) -> bool:
        return self.on_path is None or node in self.on_path

    def on_leave(self, original, updated):
        for fn in self.plan.replacements.get(original, ()):
            updated = fn(updated)
        if self.on_path is not None and original not in self.on_path:
            return updated  # no statement of this block was edited
        if isinstance(updated, (cst.Module, cst.IndentedBlock)) and isinstance(original, (cst.Module, cst.IndentedBlock)):
            updated = updated.with_changes(body=self._body(original.body, updated.body))
        return updated

    def _body(self, originals, updateds):
        out, where = self._plain_body(originals, updateds)
        if self.plan.spans and any(o in self.plan.spans for o in originals):
            return self._spans(originals, out, where)
        return out

    def _spans(self, originals, out, where):
        """Regroup the finished body: each span's statements (with what was
        inserted around them) under one ``with``."""
        result: List[cst.BaseStatement] = []
        starts = {where[o][0]: self.plan.spans[o] for o in originals if o in self.plan.spans}
        i = 0
        while i < len(out):
            if i in starts:
                last, build = starts[i]
                end = where[last][1]
                inner = [_blank_lines_unindented(s) for s in out[i:end + 1]]
                leading = getattr(out[i], "leading_lines", ())
                inner[0] = inner[0].with_changes(leading_lines=[])
                result.extend(build(inner, leading))
                i = end + 1
            else:
                result.append(out[i])
                i += 1
        return result

    def _plain_body(self, originals, updateds):
        """The block's statements with insertions and guards, and for each
        original statement the (first, last) indices in it of what it became."""
        out: List[cst.BaseStatement] = []
        where = {}
        open_guard = None  # (test code, index in out) of a guard still open
        for orig, upd in zip(originals, updateds):
            before = list(self.plan.before.get(orig, ()))
            after = list(self.plan.after.get(orig, ()))
            first = len(out)
            if orig in self.plan.guards:
                test = self.plan.guards[orig]
                key = cst.Module([]).code_for_node(test)
                if open_guard and open_guard[0] == key and not before and not _has_comment(upd):
                    # Consecutive guarded statements share one ``if``.
                    prev = out[open_guard[1]]
                    body = prev.body.with_changes(body=[*prev.body.body, upd.with_changes(leading_lines=[])])
                    out[open_guard[1]] = prev.with_changes(body=body)
                    out.extend(after)
                    where[orig] = (open_guard[1], len(out) - 1)
                    open_guard = None if after else open_guard
                    continue
                upd = self._guarded(upd, test)
                open_guard = None
            else:
                open_guard = None
                key = None
            if before:
                # Blank lines that separated the statement from what precedes
                # it now separate the inserted code instead.
                blanks, rest = _split_leading(upd)
                if blanks and hasattr(before[0], "leading_lines"):
                    before[0] = before[0].with_changes(leading_lines=[*blanks, *before[0].leading_lines])
                    upd = upd.with_changes(leading_lines=rest)
            gap = self.plan.gap_before.get(orig, 0)
            if gap and hasattr(upd, "leading_lines"):
                blanks, rest = _split_leading(upd)
                if len(blanks) < gap:
                    upd = upd.with_changes(leading_lines=[cst.EmptyLine(indent=False)] * (gap - len(blanks)) + list(upd.leading_lines))
            out.extend(before)
            out.append(upd)
            if key is not None and not after:
                open_guard = (key, len(out) - 1)
            out.extend(after)
            where[orig] = (first, len(out) - 1)
        return out, where

    @staticmethod
    def _guarded(stmt: cst.BaseStatement, test: cst.BaseExpression) -> cst.If:
        inner = stmt.with_changes(leading_lines=[])
        return cst.If(test=test, body=cst.IndentedBlock(body=[inner]), leading_lines=stmt.leading_lines)
