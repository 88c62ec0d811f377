"""Putting state in the replication scope and keeping the user's batch per replica.

What engines that replicate variables need (tf.distribute's strategies):
state created in the replication scope, the user's batch kept per replica,
data split by the engine, saves written by every worker.

These are intents; the backend says how (``replica_scope``,
``per_replica_batch``, ``distribute_dataset``, ``worker_write_path``).
"""
from __future__ import annotations

from typing import Dict, List
import libcst as cst
from .. import apis
from .keywords import keyword_free
from ..facts.batches import COMBINERS, batch_calls, batch_in_settings, batched_state, global_batch_parameters
from ..facts.replica_state import BATCH_RULE, RULE, SPLIT_RULE, every_caller_scoped, module_file, runs_user_code, scoped_state
from ..facts.syntax import append_arg, find_arg, has_star_args, kwarg, source
from . import shared_seeds
from ..facts import dataset_flow
from ..facts import shard_points


#: in_replica_scope's finding (over ``what`` and ``scope``)
SCOPE_SAID = "{what} created in {scope}: mirrored on every replica, equal from the start"


def in_replica_scope(ctx, stmts: List[cst.BaseStatement], what: str, said: str = SCOPE_SAID) -> None:
    """Run these statements in the engine's replication scope: consecutive
    simple statements of one block share one ``with``; ``said``: the finding
    (a template over ``what`` and ``scope``)."""
    a = ctx.a
    done = scoped_state(ctx)
    todo = [s for s in stmts if s not in done and not any(p in done for p in a.ancestors(s))]
    todo = [s for s in todo if not every_caller_scoped(a, s, set(todo) | done)]
    by_block: Dict[int, List[cst.BaseStatement]] = {}
    blocks = {}
    for s in todo:
        block = a.parent(s)
        by_block.setdefault(id(block), []).append(s)
        blocks[id(block)] = block
    for key, group in by_block.items():
        body = list(blocks[key].body)
        group.sort(key=body.index)
        runs: List[List[cst.BaseStatement]] = []
        for s in group:
            if runs:
                prev = runs[-1][-1]
                between = body[body.index(prev) + 1:body.index(s)]
                if len(between) <= 3 and all(isinstance(b, cst.SimpleStatementLine) and not runs_user_code(a, b)
                                             for b in between):
                    runs[-1] += between + [s]
                    continue
            runs.append([s])
        for run in runs:
            item = cst.WithItem(item=ctx.expr(ctx.backend.replica_scope()))
            if ctx.plan.wrap(run, [item]):
                done.update(run)
                ctx.change(run[0], RULE, ctx.say(said, what=what, scope=ctx.fill(ctx.backend.replica_scope())),
                           through=run[-1])


def keep_batch_per_replica(ctx, value: cst.BaseExpression, what: str) -> None:
    """The engine reads a batch of this size for all replicas together:
    multiply it so every replica still gets the user's batch."""
    if value in batched_state(ctx):
        return
    batched_state(ctx).add(value)
    new = ctx.expr(ctx.backend.per_replica_batch(source(ctx.module, value)))
    ctx.plan.replace(value, lambda old: new)
    ctx.change(value, BATCH_RULE, ctx.say("{what}: batch {batch} kept per replica (the global batch is {batch} x {size})",
                                          what=what, batch=ctx.a.code(value)))


def dataset_batches_per_replica(ctx, dataset, what: str) -> bool:
    """Every ``.batch(n)`` of a dataset's flow keeps n per replica; False
    (with a warning) when none can be found."""
    calls = batch_calls(ctx.a, dataset)
    if not calls:
        ctx.warn(dataset, BATCH_RULE, ctx.say(
            "{what}: the batch size of this dataset is the global batch under {engine}: multiply it by {size} "
            "where the dataset is batched to keep the per-replica batch (and the learning-rate scaling) meaningful",
            what=what))
        return False
    for call in calls:
        reader = ctx.a.is_name(call, apis.BATCHING_SOURCES)
        transformation = ctx.a.is_name(call, apis.BATCHING_TRANSFORMATIONS)
        if transformation is not None:
            arg = find_arg(call, *apis.BATCHING_TRANSFORMATIONS[transformation])
        elif reader is None:
            arg = find_arg(call, "batch_size", 0)
        else:
            keyword, position, default = apis.BATCHING_SOURCES[reader]
            arg = find_arg(call, keyword, position)
            if arg is None:
                if default is not None:
                    _batch_reader_default(ctx, call, keyword, default, what)
                continue
            if isinstance(arg.value, cst.Name) and arg.value.value == "None":
                continue  # unbatched: batched further down the flow
        if arg is not None:
            keep_batch_per_replica(ctx, arg.value, what)
    return True


def _batch_reader_default(ctx, call: cst.Call, keyword: str, default: int, what: str) -> None:
    """A reader batching by its default size: that size, kept per replica,
    given explicitly."""
    if call in batched_state(ctx):
        return
    batched_state(ctx).add(call)
    if not keyword_free(ctx, call, keyword, ctx.fill(ctx.backend.per_replica_batch(str(default))), BATCH_RULE):
        return
    new = ctx.expr(ctx.backend.per_replica_batch(str(default)))
    ctx.plan.replace(call, lambda c: append_arg(c, kwarg(keyword, new)))
    ctx.change(call, BATCH_RULE, ctx.say("{what}: {reader}'s default batch {batch} kept per replica (the global batch "
                                         "is {batch} x {size})", what=what, reader=ctx.a.code(call.func),
                                         batch=str(default)))


def split_by_engine(ctx, dataset, what: str) -> None:
    """The engine splits the dataset between workers: data in memory by
    sample (told explicitly: it has no files), files by file. Splitting by
    sample keeps every element of the pipeline and takes each worker's
    share at its end, so every shuffle on the way must be seeded alike."""
    a = ctx.a
    sources = dataset_flow.dataset_sources(a, dataset)
    if not sources:
        ctx.warn(dataset, SPLIT_RULE, ctx.say(
            "{what}: cannot find where this dataset is built: make sure {engine} can split it between workers "
            "(files, or AutoShardPolicy.DATA for data in memory)", what=what))
        return
    done = ctx.state("replicas.split")
    for src in sources:
        if src in done:
            continue
        done.add(src)
        shared_seeds.share_seed(ctx, src)  # a reader shuffling with its own random seed: one seed for every worker
        for upstream in dataset_flow.row_origins(a, src):
            shared_seeds.share_seed(ctx, upstream)  # the rows' order is its order: the same on every worker
        if a.is_name(src, apis.KNOWN_SIZE_SOURCES):
            new = ctx.expr(ctx.backend.shard_dataset(source(ctx.module, src, False)))
            ctx.plan.replace(src, lambda old, new=new: new)
            ctx.change(src, SPLIT_RULE, ctx.say("{what}: data in memory split between workers by sample", what=what))
        else:
            ctx.change(src, SPLIT_RULE, ctx.say("{what}: {engine} splits this dataset between workers (by file where it can)", what=what))
    # every random draw on the way, seeded alike: shuffles, and combiners drawing which dataset comes next
    draws = [(c, ("seed", 1), "shuffled with one seed on every worker, so their shares do not overlap")
             for c in batch_calls(a, dataset, methods=("shuffle",)) or []]
    for c in batch_calls(a, dataset, methods=(COMBINERS,)) or []:
        name = a.is_name(c, apis.SEEDED_DATASET_COMBINERS)
        if name is not None and not has_star_args(c):
            draws.append((c, apis.SEEDED_DATASET_COMBINERS[name], f"{a.code(c.func)}: one seed on every worker, "
                          "so they draw the same stream and their shares of it do not overlap"))
    for call, seed_arg, message in draws:
        if call in done or find_arg(call, *seed_arg) is not None:
            continue
        done.add(call)
        shared_seeds.add_kwarg(ctx, call, seed_arg[0], shard_points.SHARED_SEED)
        ctx.change(call, SPLIT_RULE, message)


def write_path(ctx, call: cst.Call, keyword, position: int, what: str) -> bool:
    """Every worker runs this save; the path is the worker's own."""
    arg = find_arg(call, keyword, position)
    if arg is None:
        return False
    template = ctx.backend.worker_write_path(source(ctx.module, arg.value, False))
    ctx.state("replicas.worker_writes").add(id(call))  # for reads back of what this worker wrote
    new = ctx.expr(template)
    ctx.plan.replace(arg.value, lambda old: new)
    ctx.change(call, "worker-writes", ctx.say(
        "{what} run by every worker (saving may run collective operations); the chief writes to "
        "{path}, the other workers to a temporary directory", what=what, path=ctx.a.code(arg.value)))
    return True


def external_helper_dataset(ctx, site: dataset_flow.HelperSite, what: str) -> None:
    """A dataset a helper of another module builds (that module is not
    edited): its batch kept per replica through the argument that sets it
    at this call, its data in memory split by sample (the option set on the
    dataset the helper returns holds for its whole pipeline); what cannot
    be done from here is reported with the edit to make in the helper."""
    a = ctx.a
    call = site.call
    other, fdef, rets = dataset_flow.external_returned(a, call, site.path)
    helper = a.code(call.func)
    params = list(fdef.params.params)
    batches = [c for r in rets for c in batch_calls(other, r) or []]
    if not batches:
        ctx.warn(call, BATCH_RULE, ctx.say(
            "{what}: cannot find where {helper}() batches its dataset: the batch there is the global batch under "
            "{engine}; multiply it by {size} to keep the per-replica batch", what=what, helper=helper))
    for b in batches:
        reader = other.is_name(b, apis.BATCHING_SOURCES)
        keyword, position = (apis.BATCHING_SOURCES[reader][:2] if reader is not None else ("batch_size", 0))
        arg = find_arg(b, keyword, position)
        param = dataset_flow.helper_param(other, fdef, arg.value) if arg is not None else None
        given = find_arg(call, param.name.value, params.index(param)) if param is not None else None
        keyed = batch_in_settings(ctx, other, fdef, call, arg.value) if arg is not None and param is None else None
        if keyed is not None:  # .batch(config["batch_size"]), the dict handed in written out here
            keep_batch_per_replica(ctx, keyed[1], what)
            global_batch_parameters(ctx).setdefault(call, set()).add(keyed[0].name.value)
        elif given is not None and not any(x.star for x in call.args):
            keep_batch_per_replica(ctx, given.value, what)
            global_batch_parameters(ctx).setdefault(call, set()).add(param.name.value)
        elif param is not None and param.default is not None and not any(x.star for x in call.args) \
                and call not in batched_state(ctx):
            global_batch_parameters(ctx).setdefault(call, set()).add(param.name.value)
            batched_state(ctx).add(call)
            new = ctx.expr(ctx.backend.per_replica_batch(source(other.module, param.default, False)))
            name = param.name.value
            ctx.plan.replace(call, lambda c, new=new, name=name: append_arg(c, kwarg(name, new)))
            ctx.change(call, BATCH_RULE, ctx.say(
                "{what}: {helper}()'s default batch {batch} kept per replica (the global batch is {batch} x {size})",
                what=what, helper=helper, batch=other.code(param.default)))
        elif param is None:
            ctx.warn(call, BATCH_RULE, ctx.say(
                "{what}: {helper}() batches by {batch} ({module}, line {line}): that is the global batch under "
                "{engine}; multiply it by {size} there to keep the per-replica batch", what=what, helper=helper,
                batch=other.code(b), line=str(other.line(b)), module=module_file(other)))
    sources = [s for r in rets for s in dataset_flow.dataset_sources(other, r)]
    done = ctx.state("replicas.split")
    key = call if site.path is None else (site.unpack, site.name)
    if key not in done:
        done.add(key)
        if sources and all(other.is_name(s, apis.KNOWN_SIZE_SOURCES) for s in sources) and site.path is not None:
            # one dataset of the tuple: split where it is unpacked
            split = ctx.fill(ctx.backend.shard_dataset(site.name))
            ctx.plan.insert_after(a.statement_of(site.unpack), ctx.stmts(f"{site.name} = {split}"))
            ctx.change(site.unpack, SPLIT_RULE, ctx.say(
                "{what}: the data in memory {helper}() makes {name} of is split between workers by sample",
                what=what, helper=helper, name=site.name))
        elif sources and all(other.is_name(s, apis.KNOWN_SIZE_SOURCES) for s in sources):
            # filled now, so that the setup writes the helper the template names
            new_template = ctx.fill(ctx.backend.shard_dataset("{inner}"), inner="{inner}")
            ctx.plan.replace(call, lambda upd: ctx.expr(new_template, inner=ctx.module.code_for_node(upd)))
            ctx.change(call, SPLIT_RULE, ctx.say("{what}: the data in memory {helper}() makes a dataset of is split "
                                                 "between workers by sample", what=what, helper=helper))
        else:
            ctx.change(call, SPLIT_RULE, ctx.say("{what}: {engine} splits the dataset {helper}() returns between "
                                                 "workers (by file where it can)", what=what, helper=helper))
        shuffles = [c for r in rets for c in batch_calls(other, r, methods=("shuffle",)) or []]
        if shuffles and not shared_seeds.external_shuffles_alike(ctx, other, fdef, call, helper):
            shuffle = shuffles[0]
            ctx.warn(call, SPLIT_RULE, ctx.say(
                "{what}: {helper}() shuffles without a seed that is the same on every worker ({module}, line "
                "{line}): the workers' shares overlap unless every worker shuffles alike: give it seed={seed}",
                what=what, helper=helper, line=str(other.line(shuffle)), seed=shard_points.SHARED_SEED,
                module=module_file(other)))
