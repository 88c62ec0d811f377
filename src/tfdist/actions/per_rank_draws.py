"""Random draws that must differ per rank (each its own share) or agree (the same order).

Samplers: objects that hand out a new batch on each call (TF1 tutorial
data sets' ``mnist.train.next_batch(n)``, a user class with a
``next_batch`` drawing from NumPy's global generator).

Their arrays are hidden inside the object, so they cannot be sliced by
rank; instead each rank draws a *different* stream (NumPy's generator
re-seeded by rank right before the training loop, from a value drawn from
the user's own stream, so a seeded script stays reproducible) and runs
1/size of the steps (the step-loop rule). A sampler that walks its data in
a fixed order would hand every rank the same batches: that is reported,
never re-seeded.
"""
from __future__ import annotations

from typing import List
import libcst as cst
from ..engine import dataflow
from ..facts.samplers import GLOBAL_STREAM, Sampler, keep_comments
from ..facts.unseeded_orders import unseeded_orders
from . import shared_seeds
from ..facts import shard_points


def draw_per_rank(ctx, samplers: List[Sampler]) -> bool:
    """Give each rank its own share of these samplers' batches. False (and
    a warning naming the edit) when one cannot be handled.

    A sampler on NumPy's global generator gets one stream per rank. Any
    other (a fixed order, or randomness tfdist cannot see) is drawn
    ``size`` times per step, each rank keeping the batch at its rank: the
    ranks split the single stream between them, disjointly, whatever the
    sampler does -- at the cost of drawing ``size`` batches per step."""
    a = ctx.a
    ok = True
    seeded = set()
    for s in samplers:
        what = a.code(s.call.func)
        if s.stream != GLOBAL_STREAM:
            ok &= split_stream(ctx, s.call, what)
            continue
        loop = dataflow.outermost_loop(a, s.call)
        stmt = a.statement_of(loop) if loop is not None else None
        if stmt is None:
            ctx.warn(s.call, shard_points.RULE, ctx.say("{what}() is not called in a loop tfdist can see: seed NumPy "
                                                         "with {rank} before the training loop by hand", what=what))
            ok = False
            continue
        if id(stmt) in seeded:
            continue
        seeded.add(id(stmt))
        seed_numpy_before(ctx, stmt)
        ctx.change(s.call, shard_points.RULE,
                   f"{what}() draws a different stream of batches on each rank (NumPy re-seeded by rank before "
                   f"the loop at line {a.line(loop)}); each rank runs 1/size of the steps")
    return ok


def seed_numpy_before(ctx, stmt) -> None:
    """NumPy's global generator re-seeded by rank right before stmt, from a
    value drawn from the user's own stream (a seeded script stays
    reproducible); once per statement, whichever rules ask."""
    done = ctx.state("samplers.numpy_seeded_before")
    if id(stmt) in done:
        return
    done.add(id(stmt))
    np_name = ctx.imports.require("numpy", "np")
    seed = ctx.backend.seed_per_rank(f"{np_name}.random.randint(2 ** 31 - 1)")
    ctx.plan.insert_before(stmt, ctx.stmts(
        f"{np_name}.random.seed({seed})",
        comment=ctx.say("{engine}: each rank draws its own stream of batches (NumPy seeded by rank).")))


def seed_generator_order_alike(ctx, expr, who: str, comment: str) -> str:
    """A generator expr shared out by position (every size-th batch, the
    batches at a worker's places) that orders its data with an unseeded
    global generator (:func:`unseeded_orders`): that generator seeded alike
    before it (:func:`seed_alike_before`). The clause the change message
    ends with ("; it orders its data with ... before line N"), or ""."""
    a = ctx.a
    orders = unseeded_orders(a, expr)
    if not orders:
        return ""
    seeded = seed_alike_before(ctx, a.statement_of(expr), orders, comment)
    return (f"; it orders its data with {' and '.join(('NumPy' if o == 'numpy' else 'Python random') for o in orders)}"
            f" and no seed: seeded the same on every {who} before line {a.line(seeded)}")


def seed_alike_before(ctx, stmt, orders: List[str], comment: str):
    """Seed the global generators named in orders ("numpy", "random") with
    the shared seed, the same on every rank, before stmt -- before the
    outermost loop around it in its function, if any: seeded again at every
    epoch, a generator made anew each epoch would make the same order every
    epoch. The statement seeded before."""
    stmt = dataflow.outermost_loop(ctx.a, stmt) or stmt
    said = "numpy" in orders and shared_seeds.seed_numpy_alike_before(ctx, stmt, comment)
    if "random" in orders:
        done = ctx.state("samplers.random_seeded")
        if stmt not in done:
            done.add(stmt)
            random_name = ctx.imports.require("random", "random")
            ctx.plan.insert_before(stmt, ctx.stmts(f"{random_name}.seed({shard_points.SHARED_SEED})",
                                                   comment=None if said else ctx.say(comment)))
    return stmt


def split_stream(ctx, call: cst.Call, what: str) -> bool:
    """``bx, by = draw(...)`` in a step loop becomes: draw size batches,
    keep the one at this rank's position."""
    a = ctx.a
    stmt = a.statement_of(call)
    small = stmt.body[0] if isinstance(stmt, cst.SimpleStatementLine) and len(stmt.body) == 1 else None
    if not (isinstance(small, cst.Assign) and small.value is call and len(small.targets) == 1):
        ctx.warn(call, shard_points.RULE, ctx.say(
            "{what}() hands out batches tfdist cannot divide here: give each rank a disjoint share of its "
            "data, e.g. draw {size} batches per step and keep the one at index {rank}", what=what))
        return False
    key = ("split-stream", id(stmt))
    keys = ctx.state("samplers.keys")  # per conversion: each stream split once
    if key in keys:
        return True
    keys.add(key)
    draw = ctx.imports.free_name("_draw")
    batch = ctx.imports.free_name("_batch")
    template = ctx.backend.keep_own_draw(draw, batch)
    (loop,) = ctx.stmts(template, comment=ctx.say(
        "{engine}: the ranks split one stream of batches: each draws size of them per step and keeps its own."),
        call=a.code(call), target=a.code(small.targets[0].target))
    ctx.plan.replace(stmt, lambda old, loop=loop: keep_comments(old, loop))
    ctx.change(call, shard_points.RULE,
               f"{what}() batches split between the ranks (each draws size per step and keeps the one at its "
               f"rank: disjoint shares of the same stream); each rank runs 1/size of the steps")
    return True
