"""Which tf.data datasets a ``next(it)`` reads.

``it`` is the iterator of a dataset: made by ``iter(ds)`` or
``ds.__iter__()``, bound to a name, and possibly handed to a function of the
module that reads it (``def run_epoch(step_fn, batches, steps): ...
next(batches)`` with ``run_epoch(train_step, iter(train_ds), n)``). Followed
through the names' bindings and the arguments this module passes for a
parameter, never by the names' text.
"""
from __future__ import annotations

from typing import List, Optional, Tuple
import libcst as cst
from ..engine import analysis as A
from ..engine.memo import fact
from ..engine.scopes import walk


def iterated(call: cst.Call) -> Optional[cst.BaseExpression]:
    """The object a call makes an iterator of: ``x`` of ``iter(x)`` or ``x.__iter__()``."""
    f = call.func
    if isinstance(f, cst.Name) and f.value == "iter" and len(call.args) == 1 and not call.args[0].star:
        return call.args[0].value
    if isinstance(f, cst.Attribute) and f.attr.value == "__iter__" and not call.args:
        return f.value
    return None


@fact
def iterator_sources(a: A.Analysis, expr: cst.BaseExpression,
                     depth: int = 0) -> List[Tuple[cst.Call, cst.BaseExpression]]:
    """(the call making the iterator, the dataset) for each tf.data iterator ``expr`` may hold."""
    if depth > 5:
        return []
    if isinstance(expr, cst.Call):
        ds = iterated(expr)
        return [(expr, ds)] if ds is not None and a.is_kind(ds, A.DATASET) else []
    if not isinstance(expr, cst.Name):
        return []
    out: List[Tuple[cst.Call, cst.BaseExpression]] = []
    for origin, value in a.assigned_values(expr):
        found = []
        if value is not None:
            found = iterator_sources(a, value, depth + 1)
        elif isinstance(origin, cst.Param):
            for arg in a.parameter_values(origin, depth):
                found += iterator_sources(a, arg, depth + 1)
        out += [pair for pair in found if all(pair[0] is not o for o, _ in out)]
    return out


def is_next(call: cst.Call) -> bool:
    return isinstance(call.func, cst.Name) and call.func.value == "next" and bool(call.args) \
        and not call.args[0].star


@fact
def next_reads(a: A.Analysis, node: cst.CSTNode) -> List[Tuple[cst.Call, cst.Call, cst.BaseExpression]]:
    """(``next(...)`` call, the call making its iterator, the dataset) for each read in ``node`` of a
    tf.data dataset's iterator."""
    return [(c, made, ds) for c in walk(node) if isinstance(c, cst.Call) and is_next(c)
            for made, ds in iterator_sources(a, c.args[0].value)]
