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
  workers' batches (a digest gathered from every replica): if they differ the script
  stops on every worker, saying why and what to change -- it never trains on
  overlapping shares.
"""
from __future__ import annotations

from dataclasses import dataclass
from typing import Optional, Set
import libcst as cst
from ..engine import dataflow
from ..engine.scopes import walk
from ..facts import gradient_tapes
from ..facts.syntax import calls_in
from ..facts import shard_points
from ..facts import step_counts
from . import per_rank_draws
from . import replica_feeds
from . import step_division
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
    _built_alike(ctx, it, loop)
    return GeneratorFeed(it, a.line(loop))


def _built_alike(ctx, obj, loop) -> None:
    """``obj`` (what the loop iterates, or the object a draw is called on) is
    a name bound once, before the training loops, to a call: NumPy and
    Python's random are seeded alike before that statement, so every worker
    builds it alike (an order it shuffles in ``__init__``)."""
    a = ctx.a
    if not isinstance(obj, cst.Name):
        return
    outer = dataflow.outermost_loop(a, loop) or loop
    origins = a.assigned_values(obj)
    if len(origins) != 1 or not isinstance(origins[0][1], cst.Call) or origins[0][0] is None \
            or dataflow.is_inside(a, origins[0][0], outer):
        return
    if any(q.startswith(("numpy.", "random.", "tensorflow.")) for q in a.names(origins[0][1])):
        return  # a generator or data the script makes itself (np.random.RandomState(0)): as it wrote it
    stmt = a.statement_of(origins[0][1])
    per_rank_draws.seed_alike_before(ctx, stmt, ["numpy", "random"], (
        "{engine}: every worker builds " + a.code(obj) + " alike (the same random order), so the replicas' "
        "shares of its batches are disjoint."))
    ctx.change(stmt, shard_points.RULE, ctx.say(
        "{name} is built before the training loop by code tfdist cannot see into: NumPy's and Python's "
        "global generators are seeded the same on every worker before line {line}, so every worker builds "
        "it alike", name=a.code(obj), line=str(a.line(stmt))))


# ------------------------------------------------------------ draws
# ``bx, by = data.next_batch(64)`` first in a counted step loop, the call
# one tfdist cannot see into (a cursor it advances, a buffer it samples):
# each step calls it once per replica, in order, replica g training on the
# g-th batch, and the loop runs 1/N of its steps -- the batches the
# original drew at steps s*N .. s*N + N-1 make step s. Its draws come from
# the shared state, and its first step is checked, as a stream's are.

@dataclass
class DrawFeed:
    statement: cst.BaseStatement  # bx, by = draw(...)
    call: cst.Call
    check: int


def draw_feed(ctx, loop, trains) -> Optional[DrawFeed]:
    """The statement drawing each step's batch from a call tfdist cannot see
    into, first in a counted step loop and read by the step only; None when
    the loop has no such statement (the array feeds decide)."""
    a = ctx.a
    if not isinstance(loop, cst.For) or not step_counts.is_range(a, step_counts.unwrapped(a, loop.iter)):
        return None
    body = list(loop.body.body)
    tapes = {id(w) for w, *_ in gradient_tapes.training_tapes(a)}
    first = next((i for i, s in enumerate(body) if trains(s) or any(id(n) in tapes for n in walk(s))), None)
    if not first:
        return None
    draws = []
    for stmt in body[:first]:
        small = stmt.body[0] if isinstance(stmt, cst.SimpleStatementLine) and len(stmt.body) == 1 else None
        if isinstance(small, cst.Assign) and len(small.targets) == 1 and isinstance(small.value, cst.Call) \
                and all(isinstance(n, (cst.Name, cst.Tuple, cst.List, cst.Element, cst.AssignTarget))
                        for n in walk(small.targets[0])) \
                and replica_feeds.batch_call_kind(a, small.value) is None:
            draws.append((stmt, small))
    if len(draws) != 1:
        return None
    stmt, small = draws[0]
    names = set(target_names(small.targets[0].target))
    counter = {n.value for n in walk(loop.target) if isinstance(n, cst.Name)}
    if not names & _read_by_step(a, loop, trains) or counter & {n.value for n in walk(small.value)
                                                                if isinstance(n, cst.Name)}:
        return None  # not the step's batch, or drawn by the step number (the array feeds cut those)
    # a step called on the batch takes it as it is (train_step(bx, by)): an argument computed from it
    # (x[idx]) would be computed outside the replicas, on the distributed value
    trained_args = {id(arg.value) for s in body[first:] for c in calls_in(s) if trains(c) for arg in c.args}
    for s in body[first:]:
        if any(id(n) in tapes for n in walk(s)):
            continue
        for n in walk(s):
            if isinstance(n, cst.Name) and n.value in names and id(n) not in trained_args \
                    and not any(id(p) in tapes for p in a.ancestors(n)):
                return None
    # the batch is the draw's alone: no other statement before the step reads it, none binds it again
    # (read after the loop, it is this worker's rows there: rules/replica_tape.py)
    for other in body[:first]:
        if other is not stmt and names & {n.value for n in walk(other) if isinstance(n, cst.Name)}:
            return None
    if any(isinstance(n, cst.AssignTarget) and set(target_names(n.target)) & names
           for s in body[first:] for n in walk(s)):
        return None
    if isinstance(small.value.func, cst.Attribute):  # corpus.next_batch(64): corpus built alike
        _built_alike(ctx, small.value.func.value, loop)
    elif a.is_name(small.value, {"builtins.next"}) and small.value.args:  # next(it): it built alike
        _built_alike(ctx, small.value.args[0].value, loop)
    return DrawFeed(stmt, small.value, a.line(loop))


def split_draws(ctx, loop, feed: DrawFeed) -> None:
    """The draw called once per replica; the loop's steps divided."""
    # filled now, so that the setup writes the helper the template names
    template = ctx.fill(ctx.backend.split_batch_stream("lambda: {inner}", feed.check), inner="{inner}")
    ctx.plan.replace(feed.call, lambda upd: ctx.expr(template, inner=ctx.module.code_for_node(upd)))
    ctx.change(feed.call, shard_points.RULE, ctx.say(
        "{what}() draws one batch a step by code tfdist cannot see into: each step draws it once per replica, "
        "in order, each replica training on its own (the user's batch size; 1/{size} of the steps); what it draws from NumPy's and Python's global generators is "
        "drawn alike on every worker and, at run time, the workers compare their first step's batches and stop, "
        "saying so, if they differ", what=ctx.a.code(feed.call.func)))
    if step_division.divide(ctx, loop, "training steps") == step_counts.UNKNOWN:
        ctx.warn(loop, shard_points.RULE, ctx.say(
            "cannot see how many steps this loop runs: each step trains on {size} draws of the original, so "
            "run 1/{size} of the steps"))
