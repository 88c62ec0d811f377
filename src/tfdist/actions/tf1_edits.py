"""Editing TF1 graphs: the distributed optimizer, one GPU per session, divided feeds and input.

Pieces shared by the TF1 rules (Session and MonitoredSession)."""
from __future__ import annotations

from typing import Dict, List, Optional, Set
import libcst as cst
from .. import apis
from ..engine import analysis as A
from ..engine import dataflow
from ..facts.batch_helpers import reorders_itself, rows_under, shuffled_with
from ..facts.fed_arrays import fed_array_roots, fed_arrays_read, fed_from_streams, samplers_fed, sliced_for
from ..facts.syntax import append_arg, calls_in, find_arg, kwarg, mentions, method_name, receiver
from ..facts.tf1_graphs import SlicePoint, argument_values, bound_names, changed_in_place, feed_values, feeds, full_batch_feeds, full_size_uses, is_docstring, lifted_to_common_block, optimizer_loss_calls, per_rank_sizes_in_graph, pinned_configs, returned_by_callers, shuffle_off, whole_feeds
from ..facts.tf1_train_ops import GPU_OPTIONS, PS_DISTRIBUTION, initialized_for_training, optimizer_calls, runs_train_op_through_calls, should_stop_loop, tf1_prefix, train_op_names, train_runs, until_out_of_range
from . import learning_rate
from . import per_rank_draws
from . import sharding
from . import shared_seeds
from . import step_division
from . import warmup_edits
from ..facts import learning_rates
from ..facts import shard_points
from ..facts import step_counts


def check_convertible(ctx) -> None:
    """Refuse what the TF1 recipe cannot convert safely."""
    a = ctx.a
    for c in a.calls:
        if a.is_name(c, PS_DISTRIBUTION):
            raise ctx.unsupported(c, f"{a.code(c.func)}: this script is already distributed with TF1 parameter "
                                     "servers; tfdist converts single-process scripts only")
    # DistributedOptimizer averages gradients in compute_gradients() (which
    # minimize() calls): gradients from tf.gradients() given straight to
    # apply_gradients() would not be averaged and the ranks would drift apart.
    applies = [c for c in a.calls if method_name(c) == "apply_gradients" and a.is_kind(receiver(c), A.TF1_OPTIMIZER)]
    computes = [c for c in a.calls if method_name(c) == "compute_gradients" and a.is_kind(receiver(c), A.TF1_OPTIMIZER)]
    if applies and not computes:
        raise ctx.unsupported(applies[0], ctx.say("apply_gradients() with gradients not computed by the optimizer's "
                                                  "compute_gradients(): {optimizer_wrapper} would not average them "
                                                  "(use optimizer.compute_gradients or minimize)"))


def wrap_optimizers(ctx) -> None:
    """DistributedOptimizer around every TF1 optimizer; its learning rate
    scaled with the global batch -- unless every step trains on the whole
    data set (full-batch): the global batch is then the original one, and
    the rate stays as the user set it."""
    a = ctx.a
    full_batch = full_batch_feeds(ctx) is not None
    for call in optimizer_calls(a):
        name = next(t.name for t in a.types(call) if t.kind == A.TF1_OPTIMIZER)
        if full_batch:
            ctx.change(call, learning_rates.RULE, "learning rate kept: every step still trains on the whole data set "
                                              "(full-batch), split between the ranks, so the global batch is unchanged")
        elif learning_rate.scale_optimizer_lr(ctx, call, name):
            warmup_edits.warm_up_tf1_optimizer(ctx, call)
        else:
            warmup_edits.not_warmed_up(ctx, call)
        template = ctx.backend.wrap_optimizer("{inner}", keras=False)
        ctx.plan.replace(call, lambda upd, t=template: ctx.expr(t, inner=ctx.module.code_for_node(upd)))
        ctx.change(call, "distributed-optimizer", ctx.say("{optimizer} wrapped in {optimizer_wrapper} (gradients averaged across ranks)", optimizer=a.code(call.func)))


def pin_config(ctx, call: cst.Call, position) -> None:
    """Pass a ConfigProto that makes only this rank's GPU visible."""
    a = ctx.a
    arg = find_arg(call, "config", position)
    tf1 = tf1_prefix(ctx, call)
    if arg is None:
        new = ctx.expr(ctx.backend.tf1_device_config(tf1))
        ctx.plan.replace(call, lambda c: append_arg(c, kwarg("config", new)))
        ctx.change(call, "gpu-pinning", "session config pins one GPU per process (by local rank)")
        return
    value = arg.value
    target = value
    if isinstance(value, cst.Name):
        bound = a.assigned_values(value)
        if len(bound) == 1 and isinstance(bound[0][1], cst.Call) and a.is_kind(bound[0][1], A.CONFIG_PROTO):
            stmt = a.statement_of(bound[0][0])
            if stmt is not None and stmt not in pinned_configs(ctx):
                pinned_configs(ctx).add(stmt)
                line = f"{value.value}.gpu_options.visible_device_list = {ctx.backend.tf1_visible_device_list()}"
                ctx.plan.insert_after(stmt, ctx.stmts(line, comment=ctx.say("{engine}: pin one GPU per process.")))
                ctx.change(stmt, "gpu-pinning", f"{value.value} pins one GPU per process (by local rank)")
            return
    if isinstance(target, cst.Call) and a.is_kind(target, A.CONFIG_PROTO):
        gpu = find_arg(target, "gpu_options")
        if gpu is None:
            if target not in pinned_configs(ctx):
                pinned_configs(ctx).add(target)
                new_arg = kwarg("gpu_options", ctx.expr(f"{tf1}.GPUOptions(visible_device_list={ctx.backend.tf1_visible_device_list()})"))
                ctx.plan.replace(target, lambda c: append_arg(c, new_arg))
                ctx.change(target, "gpu-pinning", "session config pins one GPU per process (by local rank)")
            return
        options = gpu.value
        if (isinstance(options, cst.Call) and a.is_name(options, {GPU_OPTIONS})
                and find_arg(options, "visible_device_list") is None and not any(x.star for x in options.args)):
            if options not in pinned_configs(ctx):
                pinned_configs(ctx).add(options)
                new_arg = kwarg("visible_device_list", ctx.expr(ctx.backend.tf1_visible_device_list()))
                ctx.plan.replace(options, lambda c: append_arg(c, new_arg))
                ctx.change(options, "gpu-pinning", "session config pins one GPU per process (by local rank)")
            return
    ctx.warn(value, "gpu-pinning", ctx.say("set config.gpu_options.visible_device_list = str({local_rank}) on this config by hand"))


def shard_input(ctx) -> bool:
    """Shard the datasets turned into iterators, and those a reinitializable
    iterator is initialised with right before training. True if any was."""
    a = ctx.a
    found = False
    datasets = []
    for c in a.calls:
        if a.is_name(c, apis.DATASET_ITERATOR_FUNCTIONS) and c.args:
            datasets.append(c.args[0].value)
        elif method_name(c) in ("make_one_shot_iterator", "make_initializable_iterator") and a.is_kind(receiver(c), A.DATASET):
            datasets.append(receiver(c))
    datasets += initialized_for_training(a)
    for ds in datasets:
        if sharding.shard_dataset(ctx, ds, "input pipeline"):
            found = True
    return found


def divide_step_loops(ctx, sharded: bool, sliced=None) -> List[cst.Call]:
    """Divide the innermost loop running the train op: each rank runs 1/size of the steps.

    A ``while`` loop that stops on its own (``should_stop()``, or the end of
    a sharded tf.data input) is left alone, and so is a count computed from
    arrays already divided (``sliced``). The train op may be run by a
    function the loop calls. Returns the train-op runs.
    """
    a = ctx.a
    train_ops = train_op_names(a)
    loops = sorted(a.for_loops + a.while_loops, key=lambda n: (a.line(n), a.col(n)))
    all_runs = train_runs(a, a.module, train_ops)  # found once; loops are matched by ancestry
    training = [l for l in loops if runs_train_op_through_calls(a, l.body, all_runs)]
    innermost = [l for l in training
                 if not any(o is not l and any(x is l for x in a.ancestors(o)) for o in training)]
    # A loop whose body only calls a function holding the real step loop is an epoch loop.
    innermost = [l for l in innermost if not any(
        o is not l and dataflow.reaches(a, l.body, lambda n, o=o: n is o or any(x is n for x in a.ancestors(o)))
        for o in innermost)]
    for loop in innermost:
        if isinstance(loop, cst.While) and (should_stop_loop(loop) or (sharded and until_out_of_range(a, loop))):
            continue
        spots = [v for r in all_runs if dataflow.is_inside(a, r, loop) for v in feed_values(a, r, train_ops) or ()]
        spots += [arg for c in calls_in(loop.body) if runs_train_op_through_calls(a, c, all_runs) for arg in c.args]
        outcome = step_division.divide(ctx, loop, "training steps", sliced_for(a, loop, sliced), spots)
        if outcome == step_counts.DIVIDED and step_counts.stream_of_steps(a, loop, spots) is not None:
            ctx.state("tf1_common.streams", list).append(loop)
        if outcome == step_counts.UNKNOWN:
            ctx.warn(loop, shard_points.RULE, ctx.say("cannot see how many steps this training loop runs: make each rank "
                                                       "run 1/size of its steps (e.g. divide its step count by {size})"))
    if all_runs and not training:
        ctx.warn(all_runs[0], shard_points.RULE, "training loop not found: make each rank run 1/size of the training steps")
    return all_runs


def shard_fed_arrays(ctx, runs: List[cst.Call]) -> Optional[List[step_counts.Sliced]]:
    """Slice the arrays fed through feed_dict by rank where they and every
    array derived from them are final: right after the last statement
    binding one of them (in each function binding some). Slicing each at
    its own assignment would slice a derived array twice (``labels =
    f(data)`` after ``data`` was sliced) and pair samples with labels that
    are not theirs. Returns what was sliced, or None (nothing changed) when
    that cannot be done safely."""
    a = ctx.a
    train_ops = train_op_names(a)
    groups = fed_array_roots(a, runs, train_ops)
    if groups is None:
        return None
    points = [_slice_point(ctx, roots, readers) for roots, readers in groups]
    if any(p is None for p in points):
        return None
    return [_slice_at(ctx, point, "fed through feed_dict") for point in points]


def slice_where_final(ctx, roots: Dict[str, cst.Name], readers: List[cst.CSTNode], what: str) -> Optional[step_counts.Sliced]:
    """Slice arrays read row by row by the training step (``readers``) by
    rank, all at one point: right after the last statement binding any of
    them, where they and the arrays derived from them are final."""
    point = _slice_point(ctx, roots, readers)
    return _slice_at(ctx, point, what) if point is not None else None


def _slice_point(ctx, roots: Dict[str, cst.Name], readers: List[cst.CSTNode]) -> Optional[SlicePoint]:
    """Where the arrays are final (checked, nothing changed), or None."""
    a = ctx.a
    bindings = {}
    mutations: Dict[str, List[cst.BaseStatement]] = {}
    params: List[cst.Param] = []
    reorders: List[cst.Name] = []
    partners: Set[str] = set()
    for name, node in roots.items():
        def reorder(origin, name=name):
            # reordered in the loop that reads it (each epoch): the same rows
            loop = dataflow.outermost_loop(a, origin)
            found = loop is not None and any(dataflow.is_inside(a, r, loop) for r in readers) \
                and reorders_itself(a, origin, name)
            if found:
                reorders.append(origin)
                partners.update(p for p in shuffled_with(a, origin) if p != name)
            return found
        stmts = dataflow.all_binding_statements(a, node, params=params, skip=reorder)
        if stmts is None:
            return None
        changed = changed_in_place(a, node, stmts)
        if changed is None:
            return None
        bindings[name] = stmts
        mutations[name] = changed
    if partners - set(roots):
        # X, X_test = shuffle(X, X_test) each epoch: sliced alone, X would no
        # longer have X_test's rows to be shuffled with
        return None
    every = [s for stmts in bindings.values() for s in stmts]
    # a list filled by appends after it is bound is final after the last one
    every += [s for changed in mutations.values() for s in changed if s not in every]
    # parameters are bound at the function's entry: its body is their block
    functions = {id(a.enclosing_function(p)): a.enclosing_function(p) for p in params}
    if len(functions) > 1:
        return None
    function = next(iter(functions.values()), None)
    # bound in a nested block too (``with open(f) as fh: x = load(fh)``, then
    # ``x = reformat(x)``): final after the statement holding the last
    # binding in the outermost block holding them all
    every = lifted_to_common_block(a, every, function.body if function is not None else None)
    blocks = {id(a.parent(s)) for s in every} | ({id(function.body)} if function is not None else set())
    if len(blocks) != 1:
        lines = ", ".join(str(a.line(s)) for s in sorted(every, key=a.line))
        ctx.warn(every[-1], shard_points.RULE, ctx.say(
            "the arrays fed to the training step ({roots}) are bound in different blocks "
            "(lines {lines}): slice them by rank where they are final, all at the same point, with "
            "x = x[{rank}::{size}][:len(x) // {size}]", roots=", ".join(sorted(roots)), lines=lines))
        return None
    order = sorted(every, key=lambda s: (a.line(s), a.col(s)))
    # with no statement binding them, the arrays are final at the entry
    body = list(function.body.body if function is not None else a.parent(order[0]).body)
    entry = next((s for s in body if not is_docstring(s)), None) if function is not None else None
    first = entry if entry is not None else order[0]
    point = order[-1] if order else None
    where = point if point is not None else function.params
    if entry is None and point is None:
        return None
    if not all(dataflow.after(a, r, where) for r in [*readers, *reorders]):
        return None
    # another training loop had some of these bindings sliced at another
    # point (after the first of two blocks binding y): slicing here as well
    # would divide what comes through those bindings twice
    earlier = ctx.state("tf1_common.sliced_bindings", dict)
    key = lambda n: (n, id(bindings[n][-1]) if bindings[n] else id(function))  # noqa: E731
    if any(key(n) not in ctx.state("tf1_common.sliced") and {id(s) for s in bindings[n]} & earlier.get(n, set())
           for n in roots):
        return None
    if not sharding.arrays_sliced_where_bound(ctx, set(roots), bindings, where, rows_under):
        ctx.warn(point if point is not None else entry, shard_points.RULE, ctx.say(
            "{roots} (read by the training loop) are also handed to fit() mixed with other data, which tfdist "
            "slices there: slice each array once, by rank, where it is final, and hand fit() the shares",
            roots=", ".join(sorted(roots))))
        return None
    return SlicePoint(roots, bindings, every, body, first, point, entry, function)


def _slice_at(ctx, found: SlicePoint, what: str) -> step_counts.Sliced:
    a = ctx.a
    roots, bindings, every, body, first = found.roots, found.bindings, found.every, found.body, found.first
    point, entry, function, where = found.point, found.entry, found.function, found.where
    for name, line, use in full_size_uses(a, body, first, point, set(roots)):
        ctx.warn(use, shard_points.RULE,
                 f"{name} (line {line}) is computed from the full data, which tfdist slices by rank after line "
                 f"{a.line(point)}, and is used here: compute {name} after line {a.line(point)} so it describes "
                 f"this rank's share")
    for name, line, use in per_rank_sizes_in_graph(a, body, point, set(roots)):
        ctx.warn(use, shard_points.RULE, ctx.say(
            "{name} (line {line}) is computed from the data after tfdist slices it by rank (line "
            "{point}), so it is this rank's count; it is used in a TensorFlow expression here: if it "
            "should be the size of the whole data set (e.g. to normalise the loss), multiply it by {size}",
            name=name, line=str(line), point=str(a.line(where))))
    # shuffled or split at random on the way (unseeded): one seed on every
    # rank, or the shares would overlap
    values = [dataflow.value_of_statement(s) for s in every if dataflow.value_of_statement(s) is not None]
    if function is not None:  # parameters: what the callers hand in
        values += [arg for p in function.params.params for _, arg in a.argument_values(p)
                   if p.name.value in roots]
    shared_seeds.same_random_split(ctx, values)
    names = sorted(roots, key=lambda n: (a.line(bindings[n][0]) if bindings[n] else 0, n))
    # another training loop reading the same arrays sliced them already
    done = ctx.state("tf1_common.sliced")
    key = lambda n: (n, id(bindings[n][-1]) if bindings[n] else id(function))  # noqa: E731
    fresh = [n for n in names if key(n) not in done]
    done.update(key(n) for n in fresh)
    for n in fresh:
        ctx.state("tf1_common.sliced_bindings", dict).setdefault(n, set()).update(id(s) for s in bindings[n])
    if not fresh:
        return step_counts.Sliced(set(roots), where)
    names = fresh
    lines = "\n".join(f"{n} = {ctx.backend.shard_array(n)}" for n in names)
    sliced = ctx.stmts(lines, comment=ctx.say("{engine}: each rank trains on its own equal share of the samples."))
    if point is not None:
        ctx.plan.insert_after(point, sliced)
    else:
        ctx.plan.insert_before(entry, sliced)
    derived = [n for n in names if bindings[n] and bindings[n][0] is not first and dataflow.depends_on(
        a, dataflow.value_of_statement(bindings[n][-1]) or cst.Name("_"), set(roots) - {n})]
    note = f" (after {', '.join(derived)} {'is' if len(derived) == 1 else 'are'} derived, so pairs stay intact)" if derived else ""
    place = " at the entry of " + function.name.value + "()" if point is None else ""
    ctx.change(point if point is not None else entry, shard_points.RULE,
               f"{', '.join(names)} ({what}) sliced by rank{place}, equal share per rank{note}")
    return step_counts.Sliced(set(roots), where)


def divide_fed_data(ctx, sharded: bool, where) -> List[cst.Call]:
    """Divide the data a TF1 script trains on, once, along its flow: the
    tf.data input was sharded (``sharded``); or the fed arrays are sliced
    where they are final; or the samplers feeding the step draw one stream
    per rank; then the step loop runs 1/size of its steps unless its count
    comes from sliced arrays. Returns the train-op runs."""
    a = ctx.a
    train_ops = train_op_names(a)
    runs = train_runs(a, a.module, train_ops)
    full_batch = None if sharded else full_batch_feeds(ctx)
    if full_batch is not None:
        roots, readers = full_batch
        if slice_where_final(ctx, roots, readers, "used whole at every step: full-batch training") is not None:
            ctx.facts["full_batch"] = True  # for tfdist verify: every rank runs every step
            return runs  # each step is still one pass over (now this rank's share of) the data: steps kept
    sliced = None if sharded else shard_fed_arrays(ctx, runs)
    fed_samplers = samplers_fed(a, runs, train_ops) if not sharded and sliced is None else None
    if fed_samplers:
        per_rank_draws.draw_per_rank(ctx, fed_samplers)
        # the rows are drawn from arrays a random split made: the same split on every rank
        shared_seeds.same_random_split(ctx, fed_arrays_read(a, runs, train_ops))
    runs = divide_step_loops(ctx, sharded, sliced)
    if not sharded and sliced is not None:
        _unfed_runs_on_undivided_data(ctx, runs, train_ops, sliced)
    if not sharded and sliced is None and not fed_samplers:
        fed = [r for r in runs if feeds(r, train_ops)]
        whole = whole_feeds(a, fed, train_ops)
        if whole:
            names = ", ".join(sorted({a.code(v) for v in whole}))
            ctx.warn(whole[0], shard_points.RULE, ctx.say(
                "the whole of {names} is fed at every step (full-batch training): tfdist cannot divide it "
                "without changing what a step means; give each rank x[{rank}::{size}] of each, keep "
                "the number of steps, and keep the original learning rate -- or feed mini-batches", names=names))
        elif fed and fed_from_streams(ctx, fed, train_ops):
            pass  # what is fed comes from an iterable each rank takes its own share of
        elif fed:
            ctx.warn(fed[0], shard_points.RULE, ctx.say(
                "the data fed through feed_dict is built where tfdist cannot follow it: each rank now runs "
                "1/size of the steps, so make sure each rank feeds different samples (e.g. draw them from "
                "arrays sliced with [{rank}::{size}], or seed the sampler with {rank})"))
        elif not _shuffling_queue_streams(ctx):
            ctx.warn(where, shard_points.RULE, ctx.say("no tf.data pipeline found: make sure each rank feeds different "
                                                        "samples (e.g. shard the input by {rank})"))
    return runs


def _unfed_runs_on_undivided_data(ctx, runs: List[cst.Call], train_ops: Set[str],
                                  sliced: List[step_counts.Sliced]) -> None:
    """Beside the runs fed the sliced arrays, a run feeding nothing (a
    second training on data written into its graph, ``tf.constant(Z)``)
    now runs 1/size of its steps too: on every rank's own share when its
    loss is built from the sliced arrays, else on the very same data on
    every rank (nothing divided): warned, naming the run."""
    a = ctx.a
    if any(a.names(c) & apis.TF1_QUEUE_READERS or a.is_kind(c, A.DATASET) for c in a.calls):
        return  # read from a queue: see _shuffling_queue_streams
    for run in runs:
        if feeds(run, train_ops) or dataflow.outermost_loop(a, run) is None:
            continue
        losses = [c.args[0].value for c in optimizer_loss_calls(a) if c.args
                  and any(mentions(run.args[0].value, {n}) for n in bound_names(a, c))]
        names = {n for part in sliced for n in part.names}
        if losses and any(dataflow.depends_on(a, loss, names) for loss in losses):
            continue
        ctx.warn(run, shard_points.RULE, ctx.say(
            "this run trains on data it is not fed (built into its graph, or read where tfdist cannot see), not "
            "on the arrays tfdist divided: each rank now runs 1/size of its steps on the same data; give each rank "
            "its own share of that data, e.g. x[{rank}::{size}], where it is made"))


def _shuffling_queue_streams(ctx) -> bool:
    """The loss reads batches a TF1 shuffling queue draws
    (tf.train.shuffle_batch) with no seed of its own and no graph seed:
    every rank draws its own random stream, and with 1/size of the steps
    each (divided above) that divides the work. True when so (reported);
    with a seed every rank would draw the same stream: warned."""
    a = ctx.a
    queues = [c for c in a.calls if a.is_name(c, apis.TF1_SHUFFLING_QUEUES) or (
        a.is_name(c, apis.TF1_SHUFFLING_PRODUCERS) and not shuffle_off(c))]
    if not queues:
        return False
    batches = set()
    for q in queues:
        batches |= bound_names(a, q)
    batches |= returned_by_callers(a, queues, batches)
    losses = [v for c in optimizer_loss_calls(a) if c.args for v in argument_values(a, c.args[0].value)]
    if not batches or not losses or not all(dataflow.depends_on(a, loss, batches) for loss in losses):
        return False
    seeded = [c for c in a.calls if a.is_name(c, apis.TF_GLOBAL_SEED_SETTERS)] + [
        q for q in queues if find_arg(q, "seed") is not None]
    if seeded:
        ctx.warn(seeded[0], shard_points.RULE, ctx.say(
            "{call} fixes the seed {queue} draws its batches with, so every rank draws the same stream: add {rank} "
            "to that seed (every rank then draws its own; the initial variables are broadcast from rank 0)",
            call=a.code(seeded[0].func), queue=a.code(queues[0].func)))
        return True
    ctx.change(queues[0], shard_points.RULE, ctx.say(
        "{queue} draws a random stream of batches on each rank (no seed): every rank trains on its own draw, "
        "1/{size} of the steps each", queue=a.code(queues[0].func)))
    return True
