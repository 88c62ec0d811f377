"""Wrapping GradientTape loops: the distributed tape, the broadcast after the first step, divided
loops.

TF2 custom training loops with ``tf.GradientTape``.

Per Horovod's TF2 recipe: every tape whose gradients are applied becomes a
``DistributedGradientTape`` (right before its first ``gradient`` call); after
each optimizer's first ``apply_gradients`` the variables it updated and its
own slots are broadcast from rank 0 -- exactly once, also inside a
``@tf.function`` (see the backend); the learning rate is scaled and the
datasets that feed the training loop are sharded.
"""
from __future__ import annotations

from typing import List, Optional, Sequence, Set
import libcst as cst
from .. import apis
from ..engine import analysis as A
from ..engine import dataflow
from ..engine.scopes import walk
from ..facts.gradient_tapes import RULE
from ..facts.keras_models import may_be_built_here, optimizer_constructions
from ..facts.gradient_tapes import one_variable
from ..facts.syntax import calls_in, find_arg, receiver
from ..facts.tape_rows import eager_optimizer_sites, loop_dataset, over_a_display, random_index_draws, reaches, rows_drawn_at_random, rows_read, runs_optimizer_step, samplers_feeding, step_spots
from . import iterator_shards
from . import learning_rate
from . import per_rank_draws
from . import sharding
from . import step_division
from . import tf1_edits
from . import warmup_edits
from ..facts import dataset_iterators
from ..facts import iterator_classes
from ..facts import learning_rates
from ..facts import samplers
from ..facts import shard_points
from ..facts import step_counts
from ..facts import warmups


def wrap_tape(ctx, w, item, name, calls) -> None:
    wrap_one_tape(ctx, w, item, name, calls)


def wrap_one_tape(ctx, w: cst.With, item: cst.WithItem, name: str, calls: List[cst.Call]) -> None:
    a = ctx.a
    block = a.parent(w)
    first = min(calls, key=lambda c: (a.line(c), a.col(c)))
    stmt = a.statement_of(first)
    anchor = None
    cur = stmt
    while cur is not None:
        par = a.parent(cur)
        if par is block or par is w.body:
            anchor = cur
            break
        cur = a.statement_of(par) if par is not None else None
    if anchor is None:
        ctx.warn(first, RULE, ctx.say("cannot place the {tape_wrapper} for {name}: wrap it by hand before {name}.gradient", name=name))
        return
    ctx.plan.insert_before(anchor, ctx.stmts(ctx.backend.wrap_tape(name),
                                             comment=ctx.say("{engine}: average gradients across ranks.")))
    ctx.change(item, RULE, ctx.say("GradientTape {name} wrapped in {tape_wrapper} before its gradient() call", name=name))
    for call in calls:
        sources = find_arg(call, "sources", 1)
        if sources is not None and one_variable(a, sources.value):
            ctx.plan.replace(call, _listed_source)
            ctx.change(call, RULE, ctx.say(
                "{tape_wrapper} takes a list of sources: {source} given as [{source}], its one gradient taken "
                "back with [0]", source=a.code(sources.value)))


def _listed_source(call: cst.Call) -> cst.BaseExpression:
    """``tape.gradient(loss, [image])[0]`` for ``tape.gradient(loss, image)``."""
    args = list(call.args)
    i = next((k for k, arg in enumerate(args) if arg.keyword is not None and arg.keyword.value == "sources"), 1)
    args[i] = args[i].with_changes(value=cst.List([cst.Element(args[i].value)]))
    return cst.Subscript(value=call.with_changes(args=args),
                         slice=[cst.SubscriptElement(cst.Index(cst.Integer("0")))])


def scale(ctx, opt_expr, applies: Sequence[cst.Call] = ()) -> None:
    """Scale the rate of the optimizer applying the gradients: every
    construction of it that reaches the apply (followed through names and
    functions, as compile()'s optimizer is; a name rebound cell after cell
    reaches one), else the first of those its type names, in file order (a
    set's order would change from run to run)."""
    a = ctx.a
    built = [(c, t) for c, t in optimizer_constructions(a, opt_expr, 0) or []
             if t.kind == A.KERAS_OPTIMIZER and isinstance(c, cst.Call)]
    if not built:
        typed = sorted((t for t in a.types(opt_expr) if t.kind == A.KERAS_OPTIMIZER and t.call is not None),
                       key=lambda t: (a.line(t.call), a.col(t.call)))
        if len({id(t.call) for t in typed}) > 1:
            # several constructions, and tfdist cannot follow which reaches the apply: scaling one of
            # them would leave another unscaled, silently
            ctx.warn(opt_expr, learning_rates.RULE, ctx.say(
                "{opt} may be any of the optimizers built at lines {lines}, and tfdist cannot follow which "
                "reaches this step: multiply the learning rate of each one that trains here by {size} by hand",
                opt=a.code(opt_expr), lines=", ".join(str(a.line(t.call)) for t in typed)))
            return
        built = [(t.call, t) for t in typed[:1]]
    for call, t in built:
        if learning_rate.scale_optimizer_lr(ctx, call, t.name):
            warmup_edits.warm_up_tape_optimizer(ctx, call)
        else:
            warmup_edits.not_warmed_up(ctx, call)
    if built:
        return
    if not any(t.kind == A.KERAS_OPTIMIZER for t in a.types(opt_expr)) and not _scale_unseen(ctx, applies):
        ctx.warn(opt_expr, learning_rates.RULE, f"where {a.code(opt_expr)} is created is unknown: multiply its learning rate by the number of processes by hand")


def _scale_unseen(ctx, applies: Sequence[cst.Call]) -> bool:
    """An optimizer built where tfdist cannot see (a parameter only another
    module's call binds): its rate scaled on the object itself, once, when
    the step first runs -- where that runs eagerly: at each apply_gradients
    of it outside a tf.function, or where a tf.function's optimizer
    parameter is handed to it (inside a graph the scaling would be an op run
    at every step). Not when an optimizer this file builds may be it (scaled
    where it is built), nor under a warmup (which ramps the rate it finds)."""
    a = ctx.a
    traced = dataflow.traced_functions(a, apis.TF_FUNCTION)
    if traced is None or ctx.backend.warmup_epochs:
        return False
    sites: List[cst.BaseExpression] = []
    for apply_call in applies:
        found = eager_optimizer_sites(a, receiver(apply_call), traced)
        if found is None:
            return False
        sites.extend(s for s in found if all(s is not t for t in sites))
    if not sites or any(may_be_built_here(a, s) for s in sites):
        return False
    for site in sites:
        template = learning_rate.scale_at_run_time(ctx, site, warmups.keras_module(ctx), "when the step first runs")
        if template is None:
            return False  # --lr-scaling none
        ctx.plan.replace(site, lambda upd, template=template: ctx.expr(template, inner=ctx.module.code_for_node(upd)))
    return True


def divide_loops(ctx, applies: Set[int], whole: Sequence = ()) -> None:
    """Shard the datasets the training loops read, or divide their steps; ``whole``: loops of
    steps each on the whole data, left as they are (every rank runs every step)."""
    a = ctx.a
    training_loops = [f for f in a.for_loops if runs_optimizer_step(a, f.body, applies)]
    dataset_loops = []
    for loop in training_loops:
        ds, take = loop_dataset(a, loop.iter)
        if ds is None:
            continue
        dataset_loops.append(loop)
        if not sharding.shard_dataset(ctx, ds, "training data"):
            ctx.warn(loop.iter, shard_points.RULE, ctx.say("cannot find where this dataset is built: shard it with .shard({size}, {rank})"))
        sharding.divide_steps_taken(ctx, ds)
        step_division.divide_enumerated_cap(ctx, loop)
    # A loop inside a loop over a dataset is part of its step (the updates
    # of a step written by hand: for g, v in zip(grads, variables)).
    # So is a loop over a list written out (``for layers, optimizer in ((lower,
    # opt1), (upper, opt2)):``): it applies each of a fixed set, once a step.
    candidates = [l for l in training_loops + [w for w in a.while_loops if runs_optimizer_step(a, w.body, applies)]
                  if l not in dataset_loops and not reaches(a, l.body, dataset_loops)
                  and not any(anc in dataset_loops for anc in a.ancestors(l)) and not over_a_display(l)]
    # Only the innermost loop is the step loop; one around it (directly or
    # through a function it calls) is an epoch loop and keeps its count.
    step_loops_found = [l for l in candidates if not any(o is not l and reaches(a, l.body, [o]) for o in candidates)
                        and not any(l is w for w in whole)]
    for loop in step_loops_found:
        if iterator_classes.iterated_instance(a, loop):
            if iterator_shards.shard_iterated_class(ctx, loop, otherwise=lambda loop=loop: step_division.share_stream(
                    ctx, loop, "training steps", step_spots(a, loop, applies))):
                continue  # the class ends each epoch after the rank's share of its batches (or the loop takes its share)
        sliced = _slice_rows_read(ctx, loop, applies)
        found = samplers_feeding(a, loop, applies)
        if sliced is None:  # rows not sliced by rank: random rows must differ per rank
            read = {n.value for spot in step_spots(a, loop, applies) for n in walk(spot) if isinstance(n, cst.Name)}
            found += [samplers.Sampler(c, samplers.GLOBAL_STREAM)
                      for c in random_index_draws(a, loop, read, apis.NUMPY_GLOBAL_RANDOM)]
            if shard_points.global_seed_set_before(a, loop):
                for draw in random_index_draws(a, loop, read, apis.TF_GLOBAL_RANDOM):
                    ctx.warn(draw, shard_points.RULE, ctx.say(
                        "the rows of each step are drawn with {draw}(...) after the script seeds TensorFlow, so every "
                        "rank draws the same rows: seed it per rank right before this loop, e.g. "
                        "tf.random.set_seed(<seed> + {rank}), by hand", draw=a.code(draw.func)))
        if found:
            per_rank_draws.draw_per_rank(ctx, found)
        if step_division.divide(ctx, loop, "training steps", sliced, step_spots(a, loop, applies)) == step_counts.UNKNOWN:
            ctx.warn(loop, shard_points.RULE, ctx.say("cannot see how many steps this training loop runs: make each rank "
                                                       "run 1/size of its steps (e.g. divide its step count by {size})"))
        _shard_iterators(ctx, loop)  # next(it) with it = iter(dataset), in a for or a while step loop


def _slice_rows_read(ctx, loop, applies: Set[int]) -> Optional[step_counts.Sliced]:
    a = ctx.a
    roots, readers = rows_read(a, loop, applies)
    if not roots:
        read = {n.value for spot in step_spots(a, loop, applies) for n in walk(spot) if isinstance(n, cst.Name)}
        if readers and rows_drawn_at_random(a, loop, read):
            return None  # nothing to slice: each rank draws its own rows (the caller re-seeds the draws by rank)
        if readers:  # rows of arrays it can follow and of ones it cannot
            ctx.warn(loop, shard_points.RULE, ctx.say(
                "the training step reads {names} (line {line}), computed from rows of an array in a way tfdist "
                "cannot follow, beside rows it can follow: slicing only some would pair samples with the labels of others; give each "
                "rank its own equal share of every one of them, e.g. x = x[{rank}::{size}][:len(x) // {size}], "
                "all after the last one is computed", names=", ".join(sorted({n.value for n in readers})),
                line=str(min(a.line(o) for o, _ in a.assigned_values(readers[0])))))
        return None
    sliced = tf1_edits.slice_where_final(ctx, roots, readers or [loop], "read by the training loop")
    if sliced is None:
        ctx.warn(loop, shard_points.RULE, ctx.say(
            "the training loop reads rows of {roots}, which tfdist cannot slice where they "
            "are final: give each rank its own equal share, e.g. x = x[{rank}::{size}]"
            "[:len(x) // {size}] for each of them, all after the last one is computed", roots=", ".join(sorted(roots))))
    return sliced


def _shard_iterators(ctx, loop) -> None:
    """``next(it)`` in a step loop, with ``it = iter(dataset)``: shard dataset."""
    a = ctx.a
    done = []
    for _next, _made, ds in dataset_iterators.next_reads(a, loop.body):
        if all(ds is not d for d in done):
            done.append(ds)
            sharding.shard_dataset(ctx, ds, "training data")
