"""Training loops over an instance of an iterator class of the script's own
(``for images, labels in trainset:`` with ``trainset = Dataset(...)`` and
``class Dataset`` defining ``__iter__``/``__next__``): the YOLO-style data
loader, which keeps its samples in attributes set in ``__init__`` (a list
of annotation lines read from a file, arrays handed in) and cuts each batch
from them by position.

The class is divided where its samples are final: right after ``__init__``
binds the last of them, each rank keeps its own equal share
(``self.annotations = self.annotations[rank::size][:len // size]``). Counts
``__init__`` derives from them afterwards (``self.num_batchs``) are then the
rank's, so the loop, which ends when the class says so, runs 1/N of the
original's steps with no other change. Only when tfdist is sure:

* the class is built once in the module (a second instance, a test set,
  would be divided too);
* each sample attribute is bound once, by a statement of ``__init__``'s own
  body, and everything else the class does with it is reading rows
  (``self.x[i]``, ``self.x[i:j]``), its length or shape, or reordering it in
  place (``np.random.shuffle(self.x)``);
* nothing in ``__init__`` reads them before the last one is bound.
"""
from __future__ import annotations

from typing import Dict, Optional

import libcst as cst

from .. import apis
from ..engine import analysis as A
from ..engine import dataflow
from ..engine.scopes import walk
from . import data_division, tf1_common

#: Methods that make an instance an iterator of batches.
ITERATOR_METHODS = ("__iter__", "__next__")


def shard_iterated_class(ctx, loop: cst.For, otherwise=lambda: False) -> bool:
    """Divide the samples of the iterator class ``loop`` iterates (see the
    module's doc); True when done (the loop needs no other division).
    Where its samples cannot be divided, ``otherwise()`` may divide the
    loop another way (True when it did): then the edit by hand is not asked for."""
    a = ctx.a
    target = loop.iter
    if not isinstance(target, cst.Name):
        return False
    classes = a.instance_classes(target)
    if len(classes) != 1:
        return False
    klass = classes[0]
    methods = {name: a.class_methods(klass, name) for name in (*ITERATOR_METHODS, "__init__")}
    if any(len(found) != 1 for found in methods.values()):
        return False
    init, step = methods["__init__"][0], methods["__next__"][0]
    samples = _sample_attributes(step)
    if not samples:
        return False
    bindings = _bound_in_init(init, samples)
    if bindings is None or set(bindings) != samples:
        return False
    if not all(_only_rows_read(a, klass, name, bindings[name]) for name in samples):
        return False
    body = list(init.body.body)
    last = max(bindings.values(), key=body.index)
    earlier = body[:body.index(last)]
    if any(_reads_attribute(s, samples) and s not in bindings.values() for s in earlier):
        return False  # a count taken from the whole samples before they are final
    # what the samples are bound from (self.x = x): read again elsewhere in
    # __init__ (self.num_batchs = len(x) // bs), it counts the whole data
    sources = {n.value for b in bindings.values() for n in walk(b) if isinstance(n, cst.Name)
               and not isinstance(a.parent(n), cst.Attribute)} - {"self"}
    for stmt in body:
        if stmt in bindings.values():
            continue
        reread = sorted({n.value for n in walk(stmt) if isinstance(n, cst.Name) and n.value in sources
                         and not (isinstance(a.parent(n), cst.Attribute) and a.parent(n).attr is n)})
        if reread:
            if otherwise():
                return True
            ctx.warn(stmt, data_division.RULE, ctx.say(
                "line {line} computes from {names}, the whole data {klass} keeps as its samples: tfdist would "
                "give each rank its share of self.{attr} after line {last}, and this would still count the whole; "
                "compute it from the attributes (e.g. len(self.{attr})) and convert again, or give each rank "
                "its own share by hand", line=str(a.line(stmt)), names=", ".join(reread),
                klass=klass.name.value, attr=sorted(samples)[0], last=str(a.line(last))))
            return False
    constructions = [c for c in a.calls if isinstance(c.func, cst.Name) and c.func.value == klass.name.value]
    if len(constructions) != 1:
        if len(constructions) > 1:
            if otherwise():
                return True
            ctx.warn(loop, data_division.RULE, ctx.say(
                "{klass} (line {line}) holds the samples this loop trains on and is built {count} times: dividing "
                "its samples in __init__ would divide every instance (a test set too); give the training instance "
                "each rank's own share, e.g. self.{attr} = self.{attr}[{rank}::{size}] for it only",
                klass=klass.name.value, line=str(a.line(klass)), count=str(len(constructions)),
                attr=sorted(samples)[0]))
        return False
    if not _same_order_on_every_rank(ctx, klass, bindings, constructions[0], loop):
        return False
    names = sorted(samples, key=lambda n: (body.index(bindings[n]), n))
    lines = "\n".join(f"self.{n} = {ctx.backend.shard_array('self.' + n)}" for n in names)
    ctx.plan.insert_after(last, ctx.stmts(lines, comment=ctx.say(
        "{engine}: each rank iterates its own equal share of the samples.")))
    ctx.change(last, data_division.RULE, ", ".join(f"self.{n}" for n in names)
               + f" ({klass.name.value}'s samples, iterated by the training loop at line {a.line(loop)}) sliced by "
                 "rank where they are final, equal share per rank: each epoch ends after 1/size of the batches")
    return True


def _same_order_on_every_rank(ctx, klass, bindings, construction: cst.Call, loop) -> bool:
    """The samples come out of ``__init__`` in the same order on every rank,
    so the shares cut from them are disjoint. A draw on the way (the loader
    method shuffling the annotation lines, ``np.random.shuffle(lines)``)
    gets NumPy seeded alike right before the class is built, unless NumPy
    is seeded there already; a draw from another generator (Python's
    ``random``) is warned, nothing divided."""
    a = ctx.a
    draws = [c for b in bindings.values() for c in _calls_reached(a, b) if any(
        q.startswith(apis.RANDOM_MODULE_PREFIXES) for q in a.names(c))]
    if not draws:
        return True
    stmt = a.statement_of(construction)
    if any(not any(q.startswith("numpy.random.") for q in a.names(c)) for c in draws) \
            or stmt is None or a.enclosing_function(stmt) is not None:
        ctx.warn(loop, data_division.RULE, ctx.say(
            "{klass}'s samples are drawn in a random order as they are loaded ({call}, line {line}): every rank "
            "would load its own order and the shares cut from them would overlap; seed that draw the same on "
            "every rank, then give each rank self.{attr} = self.{attr}[{rank}::{size}] in __init__",
            klass=klass.name.value, call=a.code(draws[0].func) + "(...)", line=str(a.line(draws[0])),
            attr=sorted(bindings)[0]))
        return False
    if not data_division.global_seed_set_before(a, construction, apis.NUMPY_GLOBAL_SEED_SETTERS) \
            and data_division.seed_numpy_alike_before(ctx, stmt, "{engine}: every rank loads the samples in the "
                                                                 "same order, so the shares it takes are disjoint."):
        ctx.change(construction, data_division.RULE, f"{a.code(draws[0].func)}() in {klass.name.value}: NumPy "
                   "seeded the same on every rank before it is built, so every rank loads the same order")
    return True


def _calls_reached(a: A.Analysis, node, depth: int = 0) -> list:
    """The calls ``node`` makes, and those of the functions and methods of
    this module it calls (a few levels down)."""
    out = []
    for call in walk(node):
        if not isinstance(call, cst.Call):
            continue
        out.append(call)
        if depth < 3:
            for fdef in dataflow.callees(a, call):
                out += _calls_reached(a, fdef.body, depth + 1)
    return out


def _self_attribute(node) -> Optional[str]:
    if isinstance(node, cst.Attribute) and isinstance(node.value, cst.Name) and node.value.value == "self":
        return node.attr.value
    return None


def _sample_attributes(step: cst.FunctionDef) -> set:
    """Attributes ``__next__`` cuts rows of (``self.x[i:j]``, ``self.annotations[index]``)."""
    return {name for sub in walk(step.body) if isinstance(sub, cst.Subscript)
            for name in [_self_attribute(sub.value)] if name is not None}


def _bound_in_init(init: cst.FunctionDef, samples: set) -> Optional[Dict[str, cst.BaseStatement]]:
    """The statement of ``__init__``'s own body binding each sample attribute
    (exactly one each); None if one is bound in a nested block or twice."""
    out: Dict[str, cst.BaseStatement] = {}
    for stmt in walk(init.body):
        if not isinstance(stmt, cst.Assign):
            continue
        for target in stmt.targets:
            for node in walk(target.target):
                name = _self_attribute(node)
                if name in samples:
                    holder = next((s for s in init.body.body if any(n is stmt for n in walk(s))), None)
                    if name in out or holder is None or not isinstance(holder, cst.SimpleStatementLine):
                        return None
                    out[name] = holder
    return out


def _reads_attribute(stmt, samples: set) -> bool:
    return any(_self_attribute(n) in samples for n in walk(stmt) if isinstance(n, cst.Attribute))


def _only_rows_read(a: A.Analysis, klass: cst.ClassDef, name: str, binding: cst.BaseStatement) -> bool:
    """Every use of ``self.<name>`` in the class, besides its binding, reads
    rows of it, its length or its shape, or reorders it in place."""
    for node in walk(klass.body):
        if _self_attribute(node) != name or any(node is n for n in walk(binding)):
            continue
        if tf1_common.array_use(a, node) not in ("rows", "size", "shuffle"):
            return False
    return True


def iterated_instance(a: A.Analysis, loop) -> bool:
    """``loop`` iterates an instance of a class of this module defining
    ``__iter__`` and ``__next__``."""
    if not isinstance(loop, cst.For) or not isinstance(loop.iter, cst.Name):
        return False
    classes = a.instance_classes(loop.iter)
    return len(classes) == 1 and all(a.class_methods(classes[0], m) for m in ITERATOR_METHODS)

