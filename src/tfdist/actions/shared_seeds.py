"""The same random order on every rank: seeds shared before splits, shuffles and helpers that
draw, so that each rank's share stays disjoint.
"""
from __future__ import annotations

from typing import List
import libcst as cst
from .. import apis
from ..engine import analysis as A
from ..engine import dataflow
from ..engine.scopes import walk
from ..facts.seeding import random_splits, seeding_parameter
from ..facts.shard_points import RULE, SHARED_SEED, dataframe_draw, global_seed_set_before, seeded_earlier_in, sharded_state
from ..facts.syntax import append_arg, find_arg, has_star_args, kwarg, method_name
from ..facts import dataset_flow
from ..facts import dataset_splits
from ..facts import external_functions
from ..facts import samplers
from ..facts import writes


def same_random_split(ctx, arrays: List[cst.BaseExpression]) -> None:
    """Arrays given to training that come from a random split or shuffle
    (sklearn's train_test_split) without a seed: every process would draw
    its own split, so the ranks' shares would overlap and hold each other's
    test rows. The call gets the shared seed, unless NumPy's global
    generator is seeded before it (the same draw everywhere then)."""
    a = ctx.a
    done = ctx.state("data_division.split_seeded")
    names: set = set()
    helpers: List[cst.Call] = []
    splits = random_splits(a, arrays, names=names, helpers=helpers, ctx=ctx)
    for call in helpers:
        _seed_before_helper(ctx, call)
    # NumPy's own draws on the way (idx = np.random.permutation(n); x = x[idx],
    # np.random.shuffle(x)): one seed for every rank before the first of them
    draws = [c for c in splits if a.names(c) & (apis.NUMPY_REORDERING_DRAWS | apis.NUMPY_MASK_DRAWS)] + [
        c for c in a.calls if a.names(c) & {"numpy.random.shuffle"} and c.args
        and isinstance(c.args[0].value, cst.Name) and c.args[0].value.value in names]
    draws = [c for c in draws if _runs_once(a, c)]
    if draws:
        first = min(draws, key=lambda c: (a.line(c), a.col(c)))
        # before the loops around it: seeded once, each epoch still draws anew
        outer = dataflow.outermost_loop(a, first)
        stmt = a.statement_of(outer) if outer is not None else a.statement_of(first)
        if stmt is not None and not global_seed_set_before(a, first, apis.NUMPY_GLOBAL_SEED_SETTERS) \
                and seed_numpy_alike_before(ctx, stmt, "{engine}: every rank shuffles the data the same way, so "
                                                       "the shares it takes are disjoint."):
            ctx.change(first, RULE, f"{a.code(first.func)}(): NumPy seeded the same on every rank before it, so every "
                                    f"rank draws the same order and the shares taken from it are disjoint")
    for call in splits:
        if dataframe_draw(a, call):
            keyword, position = apis.DATAFRAME_RANDOM_DRAWS[method_name(call)], None
        elif a.is_name(call, apis.RANDOM_ARRAY_SPLITTERS):
            keyword, position = apis.RANDOM_ARRAY_SPLITTERS[a.is_name(call, apis.RANDOM_ARRAY_SPLITTERS)]
        else:
            continue
        if call in done or find_arg(call, keyword, position) is not None or has_star_args(call) \
                or global_seed_set_before(a, call, apis.NUMPY_GLOBAL_SEED_SETTERS):
            continue
        done.add(call)
        add_kwarg(ctx, call, keyword, SHARED_SEED)
        ctx.change(call, RULE, f"{a.code(call.func)}(): one {keyword} on every rank, so every rank draws the same "
                               f"split and the shares taken from it are disjoint")


def same_written_data(ctx, trainings: List[cst.Call]) -> None:
    """Data the script writes to files before it trains (``train_data.to_csv(path)``
    after an unseeded random split) on an engine where every worker writes and
    then reads its own copy: drawn alike on every worker, as a split handed
    to training is (:func:`same_random_split`), so the shares the workers
    take of what they read are disjoint and hold no evaluation rows."""
    a = ctx.a
    first = min(a.line(dataflow.module_statement(a, t)) for t in trainings)
    same_random_split(ctx, [v for v in writes.written_data(a) if a.line(dataflow.module_statement(a, v)) < first])


def _seed_before_helper(ctx, call: cst.Call) -> None:
    """A helper (of this module or another of the project) reorders or
    splits the data with NumPy's global generator and no seed of its own
    (``np.random.shuffle(data)`` inside ``get_data()``): NumPy gets one seed
    on every rank right before the call, unless it is seeded before. Only
    where the call runs once: at module level, or in a function never
    called from a loop, and not in a loop itself (seeded there, every call
    would draw the same order again)."""
    a = ctx.a
    external = external_functions.external_callable(a, call) if not isinstance(call.func, cst.Name) or \
        not a.local_functions(call.func) else None
    param = seeding_parameter(*external, call, apis.NUMPY_GLOBAL_SEED_SETTERS) if external is not None else None
    if param is not None:
        # it seeds NumPy itself, from its parameter: seeding before it would be undone there
        if call in ctx.state("data_division.split_seeded"):
            return
        ctx.state("data_division.split_seeded").add(call)
        value = external_functions.argument_at(*external, call, param)
        if value is not param.default:  # handed None: that argument becomes the seed
            new = ctx.expr(SHARED_SEED)
            ctx.plan.replace(value, lambda old, new=new: new)
        else:
            add_kwarg(ctx, call, param.name.value, SHARED_SEED)
        ctx.change(call, RULE, f"{a.code(call.func)}() seeds NumPy by its {param.name.value} argument, which this call left "
                               f"None (a seed from the OS, different in every process): one seed given, the same on "
                               f"every rank, so the shares taken from its data are disjoint")
        return
    stmt = a.statement_of(call)
    if stmt is None or dataflow.outermost_loop(a, call) is not None:
        return
    fdef = a.enclosing_function(call)
    if fdef is not None and any(dataflow.outermost_loop(a, site) is not None or a.enclosing_function(site) is not None
                                for site in dataset_flow.call_sites(a, fdef)):
        return
    if global_seed_set_before(a, call, apis.NUMPY_GLOBAL_SEED_SETTERS) or seeded_earlier_in(a, stmt):
        return
    if not seed_numpy_alike_before(ctx, stmt, "{engine}: every rank shuffles the data the same way, so the shares "
                                              "it takes are disjoint."):
        return
    ctx.change(call, RULE, f"{a.code(call.func)}() reorders the data with NumPy's global generator and no seed: "
                           f"NumPy seeded the same on every rank before it, so the shares taken from it are disjoint")


def _runs_once(a: A.Analysis, node) -> bool:
    """The code holding node runs once per process: at module level, or in
    a function (``main()``) called only from module level, outside loops --
    seeded there, a second run would not draw the same order again."""
    fdef = a.enclosing_function(node)
    if fdef is None:
        return True
    sites = dataset_flow.call_sites(a, fdef)
    return bool(sites) and not any(dataflow.outermost_loop(a, site) is not None or a.enclosing_function(site) is not None
                                   for site in sites)


def seed_numpy_alike_before(ctx, stmt, comment: str) -> bool:
    """Seed NumPy's global generator with the shared seed, the same on every
    rank, right before ``stmt`` (once per statement, whichever rule asks).
    True when the seed was put there now."""
    done = ctx.state("data_division.numpy_seeded")
    if stmt in done:
        return False
    done.add(stmt)
    np_name = ctx.imports.require("numpy", "np")
    ctx.plan.insert_before(stmt, ctx.stmts(f"{np_name}.random.seed({SHARED_SEED})", comment=ctx.say(comment)))
    return True


def add_kwarg(ctx, call: cst.Call, name: str, value: str) -> None:
    new = ctx.expr(value)
    ctx.plan.replace(call, lambda c: append_arg(c, kwarg(name, new)))


def share_seed(ctx, src: cst.Call) -> None:
    """Sources shuffling with a per-process random seed get one shared seed."""
    a = ctx.a
    name = a.is_name(src, apis.SEEDED_SHUFFLE_SOURCES)
    if name is None or (src, "seed") in sharded_state(ctx):
        return
    sharded_state(ctx).add((src, "seed"))
    switch, switch_pos, seed_key, seed_pos, by_default = apis.SEEDED_SHUFFLE_SOURCES[name]
    shuffle = find_arg(src, switch, switch_pos)
    if shuffle is not None and dataset_splits.literal_false(shuffle.value) or shuffle is None and not by_default:
        return
    if find_arg(src, seed_key, seed_pos) is not None or has_star_args(src) or seed_pos is None and any(
            arg.keyword is None for arg in src.args[3:]):
        return  # the user's seed is the same on every rank
    add_kwarg(ctx, src, seed_key, SHARED_SEED)
    ctx.change(src, RULE, f"{a.code(src.func)}: one shuffle seed shared by every rank (it picks a random one per process otherwise, and the ranks' shards would overlap)")


# --- tensorflow_datasets.load ------------------------------------------------


def tfds_fixed_file_order(ctx, src: cst.Call) -> None:
    """shuffle_files=True shuffles the files with a random seed per process:
    give every rank the same file order, so record shards stay disjoint."""
    a = ctx.a
    if (src, "seed") in sharded_state(ctx):
        return
    sharded_state(ctx).add((src, "seed"))
    sf = find_arg(src, "shuffle_files", apis.TFDS_LOAD_POS["shuffle_files"])
    if sf is None or not dataset_splits.literal_true(sf.value):
        return
    rc = find_arg(src, "read_config")
    # tfds.load(...): the module it is called on (not a builder's as_dataset)
    module = a.code(src.func.value) if isinstance(src.func, cst.Attribute) and a.is_name(
        src, apis.TFDS_LOAD - {apis.TFDS_AS_DATASET}) else None
    if rc is None and module is not None:
        add_kwarg(ctx, src, "read_config", f"{module}.ReadConfig(shuffle_seed={SHARED_SEED})")
        ctx.change(src, RULE, "shuffle_files: one file-shuffle seed shared by every rank (a random one per process would make the ranks' shards overlap)")
        return
    if rc is not None and isinstance(rc.value, cst.Call) and a.is_name(rc.value, {apis.TFDS_READ_CONFIG}):
        if find_arg(rc.value, "shuffle_seed") is None:
            add_kwarg(ctx, rc.value, "shuffle_seed", SHARED_SEED)
            ctx.change(rc.value, RULE, "ReadConfig: one file-shuffle seed shared by every rank (a random one per process would make the ranks' shards overlap)")
        return
    ctx.warn(sf.value, RULE, f"shuffle_files: the file order must be the same on every rank for the shards to be disjoint: pass read_config=tfds.ReadConfig(shuffle_seed=<same seed on every rank>)")


def seed_helper_shuffles(ctx, call: cst.Call, helper: str) -> bool:
    """Give the helper's dataset shuffles the shared seed where they have
    none: every rank then shuffles in the same order each epoch, and the
    shards taken after the shuffle are disjoint. False when a shuffle cannot
    be found or seeded."""
    a = ctx.a
    shuffles = [c for fdef in dataflow.callees(a, call) for c in walk(fdef.body)
                if isinstance(c, cst.Call) and isinstance(c.func, cst.Attribute) and c.func.attr.value == "shuffle"
                and a.is_kind(c.func.value, A.DATASET)]
    if not shuffles or any(find_arg(c, "seed", 1) is None and any(x.star for x in c.args) for c in shuffles):
        return False
    seeded = ctx.state("data_division.seeded_shuffles")
    for c in shuffles:
        if find_arg(c, "seed", 1) is None and c not in seeded:
            seeded.add(c)
            add_kwarg(ctx, c, "seed", SHARED_SEED)
            ctx.change(c, RULE, f"{helper}() shuffles with a fixed seed, the same on every rank, so the shares "
                                "each rank takes after it are disjoint")
    return True


def external_shuffles_alike(ctx, other, fdef: cst.FunctionDef, call: cst.Call, helper: str) -> bool:
    """Every dataset shuffle of a helper of another module (and of the
    functions of that module it calls) has a seed that is the same on every
    rank: a number written there, or a parameter this call sets to one --
    or leaves at None, when the shared seed is given here -- or none, with
    TensorFlow's global seed set before the call. Then every rank shuffles
    the same stream, and the shards taken at the call are disjoint. A
    shuffle under the helper's own flag counts only where the call leaves
    the flag on."""
    bodies = [fdef] + [f for c in walk(fdef.body) if isinstance(c, cst.Call) and isinstance(c.func, cst.Name)
                       for f in other.local_functions(c.func)]
    shuffles = [c for body in bodies for c in walk(body.body) if isinstance(c, cst.Call)
                and isinstance(c.func, cst.Attribute) and c.func.attr.value == "shuffle"]
    if not shuffles or has_star_args(call):
        return False
    # a shuffle under the helper's own flag that this call turns off
    # (``if shuffle: ds = ds.shuffle(...)``, called with shuffle=False) does not run here
    shuffles = [c for c in shuffles if samplers.branch_taken(other, fdef, call, c) is not False]
    if not shuffles:
        return True
    params = list(fdef.params.params)
    missing = []
    # TensorFlow's global seed set before this call: an unseeded shuffle takes its seed from it and
    # from how many random ops ran before, the same on every rank running the same script
    global_seed = global_seed_set_before(ctx.a, call)
    for shuffle in shuffles:
        seed = find_arg(shuffle, "seed", 1)
        if seed is None and global_seed:
            continue
        if seed is None:
            return False
        if dataset_flow.same_on_every_rank(other, seed.value):
            continue
        param = dataset_flow.helper_param(other, fdef, seed.value)
        if param is None:
            return False
        given = find_arg(call, param.name.value, params.index(param))
        if given is not None:
            if not dataset_flow.same_on_every_rank(ctx.a, given.value):
                return False
        elif isinstance(param.default, cst.Name) and param.default.value == "None":
            missing.append(param.name.value)
        elif param.default is None or not dataset_flow.same_on_every_rank(other, param.default):
            return False  # else a default seed written as a number: the same on every rank
    for name in sorted(set(missing)):
        add_kwarg(ctx, call, name, SHARED_SEED)
        ctx.change(call, RULE, f"{helper}() shuffles by its {name} argument: one seed given, the same on every "
                               "rank, so the shares each rank takes at this call are disjoint")
    return True
