"""Dividing a loop's steps: each rank 1/N of them.

Step loops: find the number of training steps a loop runs, in every form
real scripts write it, so the data-division rule can make each rank run
1/size of them.

Forms: ``for s in range(n)``, ``range(a, b)``, ``range(1, n + 1)``, the
``six.moves``/``xrange`` spellings, ``while step < n`` (or ``<=``) with
``step += 1`` in the body, ``while True`` and ``for s in itertools.count()``
ended by ``if step >= n: break``. A count derived from arrays that were
already divided (see ``engine.dataflow.sized_after``) is per-rank already
and left alone. Anything else is reported, never guessed.
"""
from __future__ import annotations

from typing import List, Optional
import libcst as cst
from ..engine import dataflow
from ..facts.step_counts import DIVIDED, PER_RANK, Sliced, UNKNOWN, draws_own_order, enumerated_cap, number_used_as_data, step_count, stream_of_steps, unwrapped
from ..facts.syntax import source
from . import per_rank_draws
from . import sharding
from ..facts import shard_points
from ..facts import unseeded_orders


def divide_enumerated_cap(ctx, loop) -> None:
    """A loop over the (divided) data that breaks after a fixed number of
    steps: each rank breaks after 1/size of them (within a step: the
    comparison's bound is divided), or the ranks together would train on
    size times the original's samples."""
    bound = enumerated_cap(ctx.a, loop)
    if bound is not None:
        sharding.divide(ctx, bound, "steps before the loop breaks")


def share_stream(ctx, loop, what: str, spots: List[cst.CSTNode]) -> bool:
    """Each rank takes every size-th element of an iterable of steps it
    cannot count (:func:`stream_of_steps`), in whole rounds of size
    elements: the shares are disjoint when every rank iterates the same
    elements (and draws of its own when they are random), and every rank
    runs the same number of steps. False when the loop is not such a
    stream or the engine cannot."""
    a = ctx.a
    if stream_of_steps(a, loop, spots) is None:
        return False
    it = unwrapped(a, loop.iter)
    order = draws_own_order(ctx, it)
    if "random" in unseeded_orders.unseeded_orders(a, it):
        # a generator ordering its data with Python's random: the same order on every rank
        top = dataflow.module_statement(a, loop)
        per_rank_draws.seed_alike_before(ctx, top, ["random"], "{engine}: every rank makes the same random order, so "
                                                         "the shares each rank takes of it are disjoint.")
        if isinstance(top, (cst.FunctionDef, cst.ClassDef)):
            ctx.plan.blank_lines_before(top, 2)
        ctx.change(top, shard_points.RULE, ctx.say(
            "{it} orders its data with Python's random and no seed: seeded the same on every rank before line "
            "{line}, so the shares each rank takes of its order are disjoint", it=a.code(it), line=str(a.line(top))))
    if order is not None:
        # every rank must make the same order for every size-th element to
        # be a disjoint share: NumPy gets one seed on every rank before the
        # top-level statement running the loop (every draw after it is the
        # same on every rank: the ranks run the same code)
        top = dataflow.module_statement(a, loop)
        # a helper tfdist cannot read may order with Python's random as well
        per_rank_draws.seed_alike_before(ctx, top, ["numpy"] if order == "draws" else ["numpy", "random"],
                                         "{engine}: every rank draws the same random orders, so the shares each "
                                         "rank takes of them are disjoint.")
        if isinstance(top, (cst.FunctionDef, cst.ClassDef)):
            ctx.plan.blank_lines_before(top, 2)
        return _take_share_of_steps(ctx, loop, ctx.say(
            "{what}: {it} yields one step's data at a time and its length is not visible here: each rank takes "
            "every size-th element of it, in whole rounds, so every rank runs the same number of steps; {why}: "
            "NumPy is seeded the same on every rank before line {line}, so every rank makes the same orders and the "
            "shares are disjoint", what=what, it=a.code(it), line=str(a.line(top)), why=(
                "it orders its data with NumPy's global generator and no seed" if order == "draws" else
                "it is made by a helper of a module tfdist cannot read, which may order its data with NumPy's "
                "global generator or Python's random (seeded alike too)")))
    return _take_share_of_steps(ctx, loop, ctx.say(
        "{what}: {it} yields one step's data at a time and its length is not visible here: each rank takes every "
        "size-th element of it, in whole rounds, so the shares are disjoint and every rank runs the same number of steps",
        what=what, it=a.code(it)))


def _take_share_of_steps(ctx, loop, message: str) -> bool:
    """The rank's share of a loop's stream of steps: of the whole iterable
    (see stream_reach), numbered as the original numbers it -- but for
    ``for i, x in enumerate(stream): ... if i >= n: break`` the share is
    numbered on each rank and each breaks after 1/size of n: the stream's
    own positions differ from rank to rank by up to size - 1, so ranks
    breaking on them would run different numbers of steps (a collective
    waiting for ever). A number also used as data (an index, an argument
    of anything but console output) cannot be renumbered: warned with the
    edit (True: handled)."""
    a = ctx.a
    if enumerated_cap(a, loop) is None or not loop.iter.args or loop.iter.args[0].keyword:
        return take_rank_share(ctx, loop.iter, message)
    counter = loop.target.elements[0].value.value
    used = number_used_as_data(a, loop, counter)
    if used is not None:
        ctx.warn(loop, shard_points.RULE, ctx.say(
            "this loop takes steps from a stream whose length tfdist cannot see, numbers them with enumerate and "
            "breaks after a count, and uses the number {counter} as data at line {line}: each rank must run the same "
            "number of steps on a disjoint share of the stream; take every {size}-th element on each rank (offset "
            "{rank}) and break after count // {size} of them, by hand", counter=counter, line=str(a.line(used))))
        return True
    if not take_rank_share(ctx, loop.iter.args[0].value, message + "; numbered on each rank, each breaking after "
                                                                   "1/size of the steps"):
        return False
    divide_enumerated_cap(ctx, loop)
    return True


def take_rank_share(ctx, iterable, message: str) -> bool:
    """Replace ``iterable`` by this rank's share of its elements (the
    backend's share of a stream), reported with ``message``; False when the
    engine has no such share."""
    try:
        code = ctx.backend.rank_share_of_stream(ctx, "{stream}")
    except NotImplementedError:
        return False
    # around(): the iterable as other rules leave it (a progress bar's keyword)
    ctx.plan.replace(iterable, ctx.around(code, "stream"))
    ctx.change(iterable, shard_points.RULE, message)
    return True


def divide(ctx, loop, what: str, sliced: Optional[Sliced] = None, spots: Optional[List[cst.CSTNode]] = None) -> str:
    """Make the loop run 1/size of its steps. Returns DIVIDED, PER_RANK
    (nothing to do: the count is computed from divided data) or UNKNOWN
    (nothing done; the caller warns). ``spots``: where the step's data
    enters training, for a loop over an iterable of steps tfdist cannot
    count (:func:`share_stream`)."""
    a = ctx.a
    sc = step_count(a, loop)
    if sc is None:
        if sliced is not None and isinstance(loop, cst.For):
            late, early = dataflow.sized_after(a, loop.iter, sliced.names, sliced.point)
            if late and not early:
                return PER_RANK  # iterates over (ranges of) the divided data itself
        if sliced is None and spots is not None and share_stream(ctx, loop, what, spots):
            return DIVIDED
        return UNKNOWN
    exprs = [sc.count] + ([sc.start] if sc.start is not None else [])
    if sliced is not None:
        late = early = False
        for e in exprs:
            l2, e2 = dataflow.sized_after(a, e, sliced.names, sliced.point)
            late |= l2
            early |= e2
        if late and early:
            ctx.warn(loop, shard_points.RULE,
                     f"the step count {a.code(sc.count)} mixes sizes of the data before and after it is divided "
                     f"by rank (line {a.line(sliced.point)}): make it 1/size of the single-process steps by hand")
            return PER_RANK
        if late:
            return PER_RANK
    if sc.rewrite == "count":
        sharding.divide(ctx, sc.count, what)
    else:
        start = source(a.module, sc.start)
        span = ctx.backend.divide_count(f"({a.code(sc.count)} - {start})")
        new = ctx.expr(f"{start} + {span}")
        ctx.plan.replace(sc.count, lambda old, new=new: new)
        ctx.change(sc.count, shard_points.RULE, f"{what}: range({a.code(sc.start)}, {a.code(sc.count)}) runs 1/size of its steps")
    return DIVIDED


def warn_single_steps(ctx, steps: List[cst.Call], what: str) -> None:
    """A training step that certainly runs once, outside any loop (a demo
    step, a one-off ``train_on_batch``): every rank would take it on the
    same data at N x the rate, and 1/N of one step cannot be taken. Warned,
    naming the edit. ``what``: how the message names the step."""
    for step in steps:
        if dataflow.runs_once_outside_loops(ctx.a, step):
            ctx.warn(step, shard_points.RULE, ctx.say(
                "{what} runs once, outside any loop: every rank would take it on the same data, with the learning "
                "rate x {size}; one step cannot be divided between ranks: give each rank its share of the batch "
                "(x[{rank}::{size}]) and the original learning rate, or train in a loop of steps", what=what))
