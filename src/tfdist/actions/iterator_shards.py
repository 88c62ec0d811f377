"""Dividing a loop over an iterator class of the script's own: each rank its share of its rows.

Training loops over an instance of an iterator class of the script's own
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

import libcst as cst
from .. import apis
from ..engine.scopes import walk
from ..facts.iterator_classes import ITERATOR_METHODS, bound_in_init, calls_reached, only_rows_read, reads_attribute, sample_attributes
from . import shared_seeds
from ..facts import shard_points


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
    samples = sample_attributes(step)
    if not samples:
        return False
    bindings = bound_in_init(init, samples)
    if bindings is None or set(bindings) != samples:
        return False
    if not all(only_rows_read(a, klass, name, bindings[name]) for name in samples):
        return False
    body = list(init.body.body)
    last = max(bindings.values(), key=body.index)
    earlier = body[:body.index(last)]
    if any(reads_attribute(s, samples) and s not in bindings.values() for s in earlier):
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
            ctx.warn(stmt, shard_points.RULE, ctx.say(
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
            ctx.warn(loop, shard_points.RULE, ctx.say(
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
    ctx.change(last, shard_points.RULE, ", ".join(f"self.{n}" for n in names)
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
    draws = [c for b in bindings.values() for c in calls_reached(a, b) if any(
        q.startswith(apis.RANDOM_MODULE_PREFIXES) for q in a.names(c))]
    if not draws:
        return True
    stmt = a.statement_of(construction)
    if any(not any(q.startswith("numpy.random.") for q in a.names(c)) for c in draws) \
            or stmt is None or a.enclosing_function(stmt) is not None:
        ctx.warn(loop, shard_points.RULE, ctx.say(
            "{klass}'s samples are drawn in a random order as they are loaded ({call}, line {line}): every rank "
            "would load its own order and the shares cut from them would overlap; seed that draw the same on "
            "every rank, then give each rank self.{attr} = self.{attr}[{rank}::{size}] in __init__",
            klass=klass.name.value, call=a.code(draws[0].func) + "(...)", line=str(a.line(draws[0])),
            attr=sorted(bindings)[0]))
        return False
    if not shard_points.global_seed_set_before(a, construction, apis.NUMPY_GLOBAL_SEED_SETTERS) \
            and shared_seeds.seed_numpy_alike_before(ctx, stmt, "{engine}: every rank loads the samples in the "
                                                                 "same order, so the shares it takes are disjoint."):
        ctx.change(construction, shard_points.RULE, f"{a.code(draws[0].func)}() in {klass.name.value}: NumPy "
                   "seeded the same on every rank before it is built, so every rank loads the same order")
    return True
