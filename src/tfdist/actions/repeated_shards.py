"""Dividing a dataset that repeats without end.

Endless inputs: a dataset ``.repeat()``-ed with no count.

An input repeated forever is bounded by fit()'s steps_per_epoch (divided by
the number of processes), not by its size: every rank runs the same number
of steps whatever its share holds, so the finite pipeline before
``.repeat()`` is sharded with a plain ``.shard(size, rank)`` -- before any
shuffle, so the ranks' shares are disjoint -- where the sources themselves
cannot be seen.
"""
from __future__ import annotations

import libcst as cst
from .sharding import prepare_source, wrap_node
from ..facts.repeats import endless_repeats, shard_point
from ..facts.shard_points import RULE, sharded_state


def shard_repeated(ctx, dataset: cst.BaseExpression, what: str) -> bool:
    """Shard the finite part of every endless pipeline dataset is made of.
    False (nothing changed) unless every way to the data ends in such a
    pipeline tfdist can shard safely."""
    a = ctx.a
    repeats = endless_repeats(a, dataset, frozenset())
    if not repeats:
        return False
    points = []
    for rep in repeats:
        point = shard_point(a, rep)
        if point is None:
            return False
        points.append((rep, point))
    for rep, (root, sources) in points:
        if root in sharded_state(ctx):
            continue
        sharded_state(ctx).add(root)
        for src in sources:
            prepare_source(ctx, src)
        if wrap_node(ctx, root, ctx.backend.shard_dataset_plain("{inner}")):
            ctx.change(root, RULE, f"{what}: sharded by rank before .repeat() (the input repeats forever; "
                                   f"steps_per_epoch, divided, bounds every rank's steps)")
    return True
