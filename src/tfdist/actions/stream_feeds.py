"""Feeding replicas from a stream of batches tfdist cannot see into: a step
loop iterating what a library or another module hands out (``for X, y in
d2l.load_array(...)``, ``for x, y in loader:``, an iterator class, a
generator method of an object).

Such a stream is split as a generator of the script's own is: every worker
reads it, and each group of N consecutive batches makes one step, replica g
training on the g-th (the user's batch size per replica, 1/N of the steps).
That is exact on one worker whatever the stream is; on several it needs
every worker to read the same stream, which tfdist cannot prove here, so
the converted script makes it as likely as it can and then checks:

- what the stream draws from NumPy's and Python's global generators while it
  is read is drawn from a state every worker shares (the helper swaps it in
  around each read; the script's own draws are left as they were);
- an object the loop iterates, built before the training loops (an iterator
  class shuffling its samples in ``__init__``), is built after NumPy and
  Python's ``random`` are seeded alike;
- at run time the first step of each pass over the stream compares the
  workers' batches (a digest all-reduced by MAX): if they differ the script
  stops on every worker, saying why and what to change -- it never trains on
  overlapping shares.
"""
from __future__ import annotations

from typing import Optional, Set
import libcst as cst
from ..engine import dataflow
from ..engine.scopes import walk
from ..facts import gradient_tapes
from ..facts import shard_points
from ..facts import step_counts
from . import per_rank_draws
from .replica_feeds import GeneratorFeed, target_names


def _yielded(a, loop: cst.For):
    """(the iterable, the names bound to what it yields) of a for loop: the
    element names of ``for i, (x, y) in enumerate(it)``, ``it`` inside progress bars."""
    it, target = loop.iter, loop.target
    if isinstance(it, cst.Call) and a.is_name(it, {"builtins.enumerate"}) and it.args \
            and isinstance(target, (cst.Tuple, cst.List)) and len(target.elements) == 2:
        it, target = it.args[0].value, target.elements[1].value
    return step_counts.unwrapped(a, it), set(target_names(target))


def _read_by_step(a, loop: cst.For, trains) -> Set[str]:
    """Names the training step of the loop body reads: the statements running an optimizer
    step and the tapes recording one."""
    tapes = {id(w) for w, *_ in gradient_tapes.training_tapes(a)}
    out: Set[str] = set()
    for stmt in loop.body.body:
        if trains(stmt) or any(id(n) in tapes for n in walk(stmt)):
            out |= {n.value for n in walk(stmt) if isinstance(n, cst.Name)}
    return out


def stream_feed(ctx, loop, trains) -> Optional[GeneratorFeed]:
    """The stream a step loop iterates when it is none tfdist can see into
    (not a range, not a dataset, not a generator of the script's own) and its
    training step reads what it yields; None otherwise."""
    a = ctx.a
    if not isinstance(loop, cst.For):
        return None
    it, names = _yielded(a, loop)
    if step_counts.is_range(a, it) or not names or not names & _read_by_step(a, loop, trains):
        return None
    outer = dataflow.outermost_loop(a, loop) or loop
    if isinstance(it, cst.Name):
        origins = a.assigned_values(it)
        if len(origins) == 1 and isinstance(origins[0][1], cst.Call) and origins[0][0] is not None \
                and not dataflow.is_inside(a, origins[0][0], outer):
            stmt = a.statement_of(origins[0][1])
            per_rank_draws.seed_alike_before(ctx, stmt, ["numpy", "random"], (
                "{engine}: every worker builds " + a.code(it) + " alike (the same random order), so the replicas' "
                "shares of its batches are disjoint."))
            ctx.change(stmt, shard_points.RULE, ctx.say(
                "{name} is built before the training loop by code tfdist cannot see into: NumPy's and Python's "
                "global generators are seeded the same on every worker before line {line}, so every worker builds "
                "it alike", name=a.code(it), line=str(a.line(stmt))))
    return GeneratorFeed(it, a.line(loop))
