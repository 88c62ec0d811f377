"""Which datasets repeat without end, and where an endless input can be divided.

Endless inputs: a dataset ``.repeat()``-ed with no count.

An input repeated forever is bounded by fit()'s steps_per_epoch (divided by
the number of processes), not by its size: every rank runs the same number
of steps whatever its share holds, so the finite pipeline before
``.repeat()`` is sharded with a plain ``.shard(size, rank)`` -- before any
shuffle, so the ranks' shares are disjoint -- where the sources themselves
cannot be seen.
"""
from __future__ import annotations

from typing import List
import libcst as cst
from .. import apis
from ..engine.memo import fact
from ..engine.analysis import returned_values
from .syntax import find_arg
from . import dataset_flow


def is_endless_repeat(call: cst.Call) -> bool:
    f = call.func
    if not (isinstance(f, cst.Attribute) and f.attr.value == "repeat"):
        return False
    count = find_arg(call, "count", 0)
    if count is None:
        return True
    v = count.value
    if isinstance(v, cst.Name) and v.value == "None":
        return True
    return (isinstance(v, cst.UnaryOperation) and isinstance(v.operator, cst.Minus)
            and isinstance(v.expression, cst.Integer) and v.expression.value == "1")


@fact
def endless_repeats(a, expr, seen) -> List[cst.Call]:
    """The ``.repeat()`` calls (no count) every way from expr to its data goes
    through; [] when one way reaches data without one, or cannot be followed."""
    if id(expr) in seen:  # the ids on the way here (a dataset may feed several ways)
        return []
    seen = seen | {id(expr)}
    if isinstance(expr, cst.Call):
        f = expr.func
        if isinstance(f, cst.Attribute) and f.attr.value in apis.DATASET_METHODS:
            if is_endless_repeat(expr):
                return [expr]
            if f.attr.value in ("take", "concatenate", "zip"):
                return []
            return endless_repeats(a, f.value, seen)
        combiner = a.is_name(expr, apis.DATASET_COMBINERS)
        if combiner is not None:
            arg = find_arg(expr, "datasets", apis.DATASET_COMBINERS[combiner])
            if arg is None or not isinstance(arg.value, (cst.List, cst.Tuple)) or not arg.value.elements:
                return []
            out: List[cst.Call] = []
            for el in arg.value.elements:
                if isinstance(el, cst.StarredElement):
                    return []
                sub = endless_repeats(a, el.value, seen)
                if not sub:
                    return []
                out += [r for r in sub if r not in out]
            return out
        if isinstance(f, cst.Name):
            fdefs = a.local_functions(f)
            rets = [r for fdef in fdefs for r in returned_values(fdef)]
            if len(fdefs) != 1 or not rets:
                return []
            out = []
            for r in rets:
                sub = endless_repeats(a, r, seen)
                if not sub:
                    return []
                out += [x for x in sub if x not in out]
            return out
        return []
    if isinstance(expr, cst.Name):
        value = dataset_flow.reaching_value(a, expr)
        return endless_repeats(a, value, seen) if value is not None else []
    return []


@fact
def shard_point(a, repeat: cst.Call):
    """(expression to shard, its tf.data sources) for the finite pipeline a
    ``.repeat()`` repeats: the start of its method chain, when nothing before
    that point draws random numbers per process."""
    node = repeat.func.value
    while isinstance(node, cst.Call) and isinstance(node.func, cst.Attribute) and node.func.attr.value in apis.DATASET_METHODS:
        if node.func.attr.value in ("repeat", "concatenate", "zip", "interleave", "flat_map"):
            return None
        node = node.func.value
    if upstream_random(a, node, set()):
        return None
    return node, [s for s in a.dataset_sources(node)]


@fact
def upstream_random(a, expr, seen) -> bool:
    """Does anything before expr draw random numbers per process (a shuffle,
    or a source shuffling with its own random seed that tfdist cannot fix)?"""
    if id(expr) in seen:
        return False
    seen.add(id(expr))
    if isinstance(expr, cst.Call):
        f = expr.func
        if isinstance(f, cst.Attribute) and f.attr.value in apis.DATASET_METHODS:
            return f.attr.value in apis.RANDOM_DATASET_METHODS or upstream_random(a, f.value, seen)
        if isinstance(f, cst.Name):
            return any(upstream_random(a, r, seen) for fdef in a.local_functions(f) for r in returned_values(fdef))
        return False
    if isinstance(expr, cst.Name):
        value = dataset_flow.reaching_value(a, expr)
        if value is not None:
            return upstream_random(a, value, seen)
        bound = a.assigned_values(expr)
        # a parameter, an unpacked or imported name: what it holds is unknown
        return not bound or any(v is None or upstream_random(a, v, seen) for _, v in bound)
    if isinstance(expr, cst.Subscript):
        return upstream_random(a, expr.value, seen)
    return False
