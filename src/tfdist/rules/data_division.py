"""Dividing the work: each rank reads 1/size of the data, or runs 1/size of
the steps, so one epoch still covers the data set once.

Sharding happens right at the tf.data source (before any shuffle or random
map, so the ranks' shards are disjoint) and gives every rank exactly
``len // size`` elements, so every rank runs the same number of batches:
ranks that disagree on the number of steps deadlock in an allreduce.
"""
from __future__ import annotations

from . import kinds

from typing import List, Optional, Set

import libcst as cst

from .. import apis
from ..engine import analysis as A
from ..engine import dataflow
from ..engine.analysis import returned_values
from ..engine.scopes import walk
from . import dataset_flow as flow
from . import rank0_io
from .common import append_arg, find_arg, fit_arg, has_star_args, kwarg, method_name, source

RULE = kinds.DATA_DIVISION


# State kept per conversion (ctx.state): what this module already edited,
# so the rules reaching the same node never edit it twice.
def _sharded(ctx) -> set:
    """Sources, seeds and counts already divided."""
    return ctx.state(__name__ + ".sharded")


def _wrapped(ctx) -> set:
    """Sequences given to fit() already wrapped."""
    return ctx.state(__name__ + ".wrapped")


def _state(ctx) -> dict:
    return ctx.state(__name__, dict)


def _wrap_node(ctx, node: cst.BaseExpression, template: str) -> bool:
    """Replace node by template (made with ``{inner}`` for the dataset),
    filled with node's *updated* form, so edits inside it (a seed) survive.
    False (nothing edited, a warning instead) when a preprocessing layer is
    adapted on data that would come from this shard."""
    adapt = _adapted_downstream(ctx, node)
    if adapt is not None:
        ctx.warn(node, RULE, ctx.say(
            "{layer}.adapt(...) at line {line} reads data that would be sharded by rank here: each rank would adapt "
            "the layer on its own share (a TextVectorization's vocabulary is not a variable, so it would stay "
            "different on every rank); adapt it on the whole data, then shard the dataset given to training with "
            ".shard({size}, {rank}) and an equal count per rank", layer=ctx.a.code(adapt.func.value),
            line=str(ctx.a.line(adapt))))
        return False
    template = _conditional_template(ctx, node, template)

    def rewrite(upd):
        return ctx.expr(template, inner=source(ctx.module, upd))
    ctx.plan.replace(node, rewrite)
    return True


def _adapted_downstream(ctx, node: cst.BaseExpression):
    """The first ``layer.adapt(data)`` whose data flows from node, for an
    engine whose shard holds only the rank's share wherever it is read."""
    if not ctx.backend.shard_is_in_place:
        return None
    a = ctx.a
    for call in a.calls:
        if method_name(call) != "adapt" or not isinstance(call.func, cst.Attribute):
            continue
        data = find_arg(call, "data", 0)
        if data is not None and flow.path_to(a, data.value, node) is not None:
            return call
    return None


def shard_dataset(ctx, dataset: cst.BaseExpression, what: str) -> bool:
    """Shard every tf.data source ``dataset`` is built from. False if none found."""
    a = ctx.a
    shared = flow.shared_helpers(a, dataset)
    if shared:
        for call in shared:
            _shard_local_helper(ctx, call, what)
        return True
    sources = a.dataset_sources(dataset)
    if not sources:
        return _shard_unresolved(ctx, dataset, what)
    for src in sources:
        point = positional_point(a, dataset, src)
        if point is False:
            if src not in _sharded(ctx):
                _sharded(ctx).add(src)
                ctx.warn(src, RULE, ctx.say("this dataset is cut into windows that are not flattened (flat_map) before it is batched: shard it by hand after the windows are flattened, with .shard({size}, {rank}) and an equal count per rank"))
            continue
        if point is not None:
            _shard_after_positional(ctx, point, src, what)
            continue
        if src in _sharded(ctx):
            continue
        _sharded(ctx).add(src)
        parent = ctx.a.parent(src)
        if isinstance(parent, cst.Attribute) and parent.attr.value == "shard":
            ctx.warn(src, RULE, ctx.say("the dataset is already sharded: check it is sharded by {engine} rank"))
            continue
        if ctx.a.is_name(src, apis.FILE_LEVEL_SOURCES):
            _shard_records(ctx, dataset, src, what)
            continue
        if ctx.a.is_name(src, apis.TFDS_LOAD):
            if flow.tfds_shape(ctx.a, src) != ("single", False):
                ctx.warn(src, RULE, ctx.say("this tfds.load(...) returns several datasets: shard the one used for training with .shard({size}, {rank}).take(len // {size})"))
                continue
            _tfds_fixed_file_order(ctx, src)
        share_seed(ctx, src)
        for upstream in flow.row_origins(ctx.a, src):
            share_seed(ctx, upstream)  # the rows' order is its order: the same on every rank
        later = _later_point(ctx, dataset, src)
        why = "is also used whole elsewhere"
        if later is None:
            later = _after_attribute_reads(ctx, dataset, src)
            why = "has attributes read elsewhere (class_names) that a dataset made from it does not have"
        if later is None and _adapted_downstream(ctx, src) is not None:
            later = _training_point(ctx, dataset, src)
            why = "also feeds a preprocessing layer's adapt(), which must see all of it"
        if later is not None:
            # The source's own dataset is used elsewhere too (a
            # TextVectorization.adapt, ...): every rank must see all of it there.
            if _wrap_node(ctx, later, ctx.backend.shard_dataset_known_size("{inner}")):
                ctx.change(later, RULE, f"{what}: dataset sharded by rank where it is given to training (its source {ctx.a.code(src.func)}(...) {why}), equal share per rank")
            continue
        if ctx.a.is_name(src, apis.KNOWN_SIZE_SOURCES | apis.TFDS_LOAD | apis.KERAS_BATCHED_DATASETS):
            template = ctx.backend.shard_dataset_known_size("{inner}")
        else:
            template = ctx.backend.shard_dataset("{inner}")
        if _wrap_node(ctx, src, template):
            ctx.change(src, RULE, f"{what}: dataset sharded by rank, equal share per rank")
    return True


def positional_point(a, dataset, src: cst.Call):
    """The last call on the way from ``src`` to ``dataset``, before it is
    batched, whose output depends on the position or the neighbours of each
    element (``window``, ``take``/``skip``, ...): the shard goes after it, so
    the windows are cut from the whole series and a split by count splits
    the same stream on every rank. None when there is none; False when its
    elements are still datasets (windows never flattened) where it is batched."""
    path = flow.path_to(a, dataset, src)
    point = None
    nested = False  # elements are datasets (windows) here: no shard before they are flattened
    batched = False  # elements are batches here (until an unbatch): a take() counts batches
    for call in reversed(path or []):  # from the source towards the consumer
        name = method_name(call)
        if nested:
            if name in apis.RECORD_READING_METHODS:
                nested, point = False, call
            continue
        if name in apis.BATCHING_DATASET_METHODS:
            batched = True
        elif name in apis.UNBATCHING_DATASET_METHODS:
            batched = False
        elif name in apis.POSITIONAL_DATASET_METHODS and not batched:
            point = call
            nested = name in apis.NESTING_DATASET_METHODS
    return False if nested else point


def _shard_after_positional(ctx, point: cst.Call, src: cst.Call, what: str) -> None:
    """Shard the flow right after ``point`` (see positional_point). Every
    shuffle before it gets the shared seed -- the ranks must hold the same
    stream there for their shards to be disjoint -- and the source itself
    is not sharded, so several flows cut from it (``take`` and ``skip``)
    are each sharded once, at their own point."""
    a = ctx.a
    if point in _sharded(ctx):
        return
    _sharded(ctx).add(point)
    if src in _sharded(ctx):
        # another flow already sharded the source: sharding again here would divide twice
        cut = "window() and this flat_map()" if method_name(point) in apis.RECORD_READING_METHODS else f"{method_name(point)}()"
        ctx.warn(point, RULE, ctx.say(f"{cut} cut this dataset by the position of its elements, and another use of its source {a.code(src.func)}(...) is sharded at the source: shard each flow once, after {method_name(point)}(...), with .shard({{size}}, {{rank}}) and an equal count per rank"))
        return
    share_seed(ctx, src)
    seeded = global_seed_set_before(a, point)
    for call in flow.path_to(a, point, src) or []:
        if method_name(call) in apis.RANDOM_DATASET_METHODS and find_arg(call, "seed", 1) is None and not seeded \
                and not has_star_args(call) and (call, "seed") not in _sharded(ctx):
            _sharded(ctx).add((call, "seed"))
            add_kwarg(ctx, call, "seed", SHARED_SEED)
            ctx.change(call, RULE, f"{method_name(call)}() before {method_name(point)}(): one seed shared by every rank, so the ranks hold the same stream where it is sharded and their shares are disjoint")
    known = flow.size_known(a, point)
    template = ctx.backend.shard_dataset_known_size("{inner}") if known else ctx.backend.shard_dataset("{inner}")
    if _wrap_node(ctx, point, template):
        ctx.change(point, RULE, f"{what}: dataset sharded by rank after {method_name(point)}(...), which depends on the order of the whole stream, equal share per rank")


def same_random_split(ctx, arrays: List[cst.BaseExpression]) -> None:
    """Arrays given to training that come from a random split or shuffle
    (sklearn's train_test_split) without a seed: every process would draw
    its own split, so the ranks' shares would overlap and hold each other's
    test rows. The call gets the shared seed, unless NumPy's global
    generator is seeded before it (the same draw everywhere then)."""
    a = ctx.a
    done = ctx.state(__name__ + ".split_seeded")
    names: set = set()
    helpers: List[cst.Call] = []
    splits = _random_splits(a, arrays, names=names, helpers=helpers, ctx=ctx)
    for call in helpers:
        _seed_before_helper(ctx, call)
    # NumPy's own draws on the way (idx = np.random.permutation(n); x = x[idx],
    # np.random.shuffle(x)): one seed for every rank before the first of them
    draws = [c for c in splits if a.names(c) & apis.NUMPY_REORDERING_DRAWS] + [
        c for c in a.calls if a.names(c) & {"numpy.random.shuffle"} and c.args
        and isinstance(c.args[0].value, cst.Name) and c.args[0].value.value in names]
    draws = [c for c in draws if a.enclosing_function(c) is None]
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
        if _dataframe_draw(a, call):
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


def _seed_before_helper(ctx, call: cst.Call) -> None:
    """A helper (of this module or another of the project) reorders or
    splits the data with NumPy's global generator and no seed of its own
    (``np.random.shuffle(data)`` inside ``get_data()``): NumPy gets one seed
    on every rank right before the call, unless it is seeded before. Only
    where the call runs once: at module level, or in a function never
    called from a loop, and not in a loop itself (seeded there, every call
    would draw the same order again)."""
    a = ctx.a
    external = flow.external_callable(a, call) if not isinstance(call.func, cst.Name) or \
        not a.local_functions(call.func) else None
    param = seeding_parameter(*external, call, apis.NUMPY_GLOBAL_SEED_SETTERS) if external is not None else None
    if param is not None:
        # it seeds NumPy itself, from its parameter: seeding before it would be undone there
        if call in ctx.state(__name__ + ".split_seeded"):
            return
        ctx.state(__name__ + ".split_seeded").add(call)
        value = flow.argument_at(*external, call, param)
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
                                for site in flow.call_sites(a, fdef)):
        return
    if global_seed_set_before(a, call, apis.NUMPY_GLOBAL_SEED_SETTERS) or _seeded_earlier_in(a, stmt):
        return
    if not seed_numpy_alike_before(ctx, stmt, "{engine}: every rank shuffles the data the same way, so the shares "
                                              "it takes are disjoint."):
        return
    ctx.change(call, RULE, f"{a.code(call.func)}() reorders the data with NumPy's global generator and no seed: "
                           f"NumPy seeded the same on every rank before it, so the shares taken from it are disjoint")


def seed_numpy_alike_before(ctx, stmt, comment: str) -> bool:
    """Seed NumPy's global generator with the shared seed, the same on every
    rank, right before ``stmt`` (once per statement, whichever rule asks).
    True when the seed was put there now."""
    done = ctx.state(__name__ + ".numpy_seeded")
    if stmt in done:
        return False
    done.add(stmt)
    np_name = ctx.imports.require("numpy", "np")
    ctx.plan.insert_before(stmt, ctx.stmts(f"{np_name}.random.seed({SHARED_SEED})", comment=ctx.say(comment)))
    return True


def _seeded_earlier_in(a, stmt) -> bool:
    """NumPy's global generator is seeded by a statement before ``stmt`` in its block."""
    body = list(a.parent(stmt).body) if hasattr(a.parent(stmt), "body") else []
    if stmt not in body:
        return False
    return any(a.names(c) & apis.NUMPY_GLOBAL_SEED_SETTERS for s in body[:body.index(stmt)]
               for c in walk(s) if isinstance(c, cst.Call))


def draws_unseeded(other, fdef: cst.FunctionDef, call: Optional[cst.Call] = None) -> bool:
    """``fdef`` (a function of the module ``other`` analyses) reorders rows
    with NumPy's global generator, or splits them at random without a seed,
    and never seeds NumPy itself -- directly or in a function of its module
    it calls. With ``call``: a seeding by a parameter the call leaves None
    (``np.random.seed(seed)``, seed=None: from the OS, per process) is none."""
    return _draws_unseeded(other, fdef, apis.NUMPY_GLOBAL_SEED_SETTERS, _numpy_order_draw, call=call)


def seeding_parameter(other, fdef: cst.FunctionDef, call: cst.Call, seed_setters) -> Optional[cst.Param]:
    """The parameter of ``fdef`` its seeding call is handed
    (``np.random.seed(seed)``) when ``call`` leaves it None -- the helper
    then seeds from the OS, differently in every process; None otherwise."""
    for c in walk(fdef.body):
        if isinstance(c, cst.Call) and other.names(c) & seed_setters:
            param = _seed_left_none(other, fdef, call, c)
            if param is not None:
                return param
    return None


def _seeds_at(other, fdef: cst.FunctionDef, call: cst.Call, setter: cst.Call) -> bool:
    """The seeding call ``setter`` in ``fdef`` seeds alike when ``call``
    runs it: not skipped by the function's own flag there (``if seed is not
    False:``, seed=False), nor handed a parameter the call leaves None."""
    from . import samplers  # samplers reads this module's tables
    return samplers.branch_taken(other, fdef, call, setter) is not False \
        and _seed_left_none(other, fdef, call, setter) is None


def _seed_left_none(other, fdef: cst.FunctionDef, call: cst.Call, setter: cst.Call) -> Optional[cst.Param]:
    """The parameter of ``fdef`` the seeding call ``setter`` is handed, when
    ``call`` runs that setter with the parameter None."""
    from . import samplers  # samplers reads this module's tables
    param = flow.helper_param(other, fdef, setter.args[0].value) if setter.args else None
    if param is None or samplers.branch_taken(other, fdef, call, setter) is False:
        return None
    value = flow.argument_at(other, fdef, call, param)
    return param if isinstance(value, cst.Name) and value.value == "None" else None


def draws_unseeded_python(other, fdef: cst.FunctionDef) -> bool:
    """The same for Python's global ``random`` (``random.shuffle(paths)``)."""
    return _draws_unseeded(other, fdef, apis.PYTHON_GLOBAL_SEED_SETTERS,
                           lambda o, c: bool(o.names(c) & apis.PYTHON_REORDERING_DRAWS))


def _numpy_order_draw(other, c: cst.Call) -> bool:
    if other.names(c) & apis.NUMPY_REORDERING_DRAWS:
        return True
    if other.is_name(c, apis.JOINT_ROW_SHUFFLES) and find_arg(c, "random_state") is None \
            and not has_star_args(c):
        return True  # sklearn's shuffle(X, y) draws from NumPy's global generator
    found = other.is_name(c, apis.RANDOM_ARRAY_SPLITTERS)
    if found:
        keyword, position = apis.RANDOM_ARRAY_SPLITTERS[found]
        return find_arg(c, keyword, position) is None and not has_star_args(c)
    return False


def _draws_unseeded(other, fdef: cst.FunctionDef, seed_setters, is_draw, depth: int = 0,
                    call: Optional[cst.Call] = None) -> bool:
    """fdef, or a function of its module it calls (two levels deep), makes
    a draw is_draw recognises, and fdef seeds none of seed_setters (with
    ``call``: none with a seed that call sets)."""
    calls = [c for c in walk(fdef.body) if isinstance(c, cst.Call)]
    if any(other.names(c) & seed_setters and (call is None or _seeds_at(other, fdef, call, c)) for c in calls):
        return False
    for c in calls:
        if is_draw(other, c):
            return True
        if depth < 2 and isinstance(c.func, cst.Name) and any(
                f is not fdef and _draws_unseeded(other, f, seed_setters, is_draw, depth + 1)
                for f in other.local_functions(c.func)):
            return True
    return False


def helper_draws(ctx, call: cst.Call) -> bool:
    """The call runs a function of this module or of another module of the
    project that draws unseeded (see draws_unseeded)."""
    a = ctx.a
    if isinstance(call.func, cst.Name):
        local = a.local_functions(call.func)
        if local:
            return any(draws_unseeded(a, f) for f in local)
    external = flow.external_callable(a, call)
    return external is not None and draws_unseeded(*external, call=call)


def _random_splits(a, exprs, depth: int = 0, seen=None, names=None, helpers=None, ctx=None) -> List[cst.Call]:
    """The random splitters (apis.RANDOM_ARRAY_SPLITTERS) and NumPy global
    draws the values of these expressions come from, followed through the
    names they read (collected in ``names``); with ``helpers`` a list, calls
    of functions drawing unseeded inside are collected there."""
    seen = seen if seen is not None else set()
    names = names if names is not None else set()
    out: List[cst.Call] = []
    for expr in exprs:
        if depth > 8 or id(expr) in seen:
            continue
        seen.add(id(expr))
        for node in walk(expr):
            if isinstance(node, cst.Call) and node not in out and (
                    a.is_name(node, apis.RANDOM_ARRAY_SPLITTERS) or a.names(node) & apis.NUMPY_REORDERING_DRAWS
                    or _dataframe_draw(a, node)):
                out.append(node)
            elif isinstance(node, cst.Call) and helpers is not None and ctx is not None and node not in helpers \
                    and helper_draws(ctx, node):
                helpers.append(node)
            if not isinstance(node, cst.Name):
                continue
            names.add(node.value)
            for origin, value in a.assigned_values(node):
                if value is not None:
                    out += [c for c in _random_splits(a, [value], depth + 1, seen, names, helpers, ctx) if c not in out]
                elif isinstance(origin, cst.Name):
                    unpack = flow.unpacked(a, origin)
                    if unpack is not None:
                        out += [c for c in _random_splits(a, [unpack[0].value], depth + 1, seen, names, helpers, ctx)
                                if c not in out]
                    elif dataflow.assigned_by(a, origin) is not None:
                        # x_train, x_test, ... = get_data(): what the call draws
                        out += [c for c in _random_splits(a, [dataflow.assigned_by(a, origin)], depth + 1, seen,
                                                          names, helpers, ctx) if c not in out]
    return out


def _dataframe_draw(a, call) -> bool:
    """``df.sample(frac=1)``: a pandas DataFrame method drawing rows at random
    (apis.DATAFRAME_RANDOM_DRAWS), on a receiver known to be a DataFrame."""
    return isinstance(call, cst.Call) and method_name(call) in apis.DATAFRAME_RANDOM_DRAWS \
        and isinstance(call.func, cst.Attribute) and rank0_io.object_kind(a, call.func.value) == apis.DATAFRAME


def global_seed_set_before(a, node, setters_table=None) -> bool:
    """Does the script set TensorFlow's global seed (tf.random.set_seed,
    keras.utils.set_random_seed) at module level before the code building
    ``node`` runs? Then an unseeded shuffle there draws the same order on
    every rank, and the user's own order (their split) is kept as it is. The
    code runs at its module-level statement, or, inside a function, at the
    first module-level statement calling that function. ``setters_table``:
    other seeding calls to look for (NumPy's)."""
    def top(n):
        while n is not None and not isinstance(a.parent(n), cst.Module):
            n = a.parent(n)
        return n
    table = setters_table if setters_table is not None else apis.TF_GLOBAL_SEED_SETTERS
    setters = [top(c) for c in a.calls if a.names(c) & table and a.enclosing_function(c) is None]
    if not setters:
        return False
    fdef = a.enclosing_function(node)
    if fdef is None:
        runs = [top(node)]
    else:
        runs = [top(site) for site in flow.call_sites(a, fdef) if a.enclosing_function(site) is None]
    body = list(a.module.body)
    if not runs or None in runs or None in setters:
        return False
    first = min(body.index(r) for r in runs)
    return any(body.index(t) < first for t in setters)


def shard_arrays(ctx, values: List[cst.BaseExpression], what: str) -> bool:
    """Slice in-memory arrays (NumPy, lists, tensors) given to fit(). A
    tuple, list or dict of arrays (several inputs or outputs) is sliced
    array by array with the same rows on each: every array of one fit()
    holds the same samples in the same order, so the same strided rows keep
    the inputs and labels of a sample together."""
    same_random_split(ctx, values)
    leaves: List[cst.BaseExpression] = []
    for v in values:
        found = flow.array_leaves(v, ctx.a)
        if found is None:
            ctx.warn(v, RULE, f"{what}: cannot slice {ctx.a.code(v)} safely; give each rank 1/size of the samples by hand")
            return False
        mixed = [leaf for leaf in found if _held_directly(ctx.a, leaf, [v]) and flow.array_structure(ctx.a, leaf) == "mixed"]
        if mixed:
            ctx.warn(mixed[0], RULE, ctx.say(
                "{what}: {name} is bound both to a list or dict of arrays (one per input or output) and to "
                "something else, so tfdist cannot tell how to slice it; give each rank 1/size of the samples "
                "by hand (x[{rank}::{size}] of every array)", what=what, name=ctx.a.code(mixed[0])))
            return False
        leaves += found
    for v in leaves:
        # a call (np.ones((64, 8))) is evaluated once: slicing it twice would draw random arrays twice;
        # arithmetic (x - mu) once too, rather than computed twice
        once = isinstance(v, (cst.Call, cst.BinaryOperation, cst.UnaryOperation))
        template = ctx.backend.shard_array_once if once else ctx.backend.shard_array
        structure = flow.array_structure(ctx.a, v) if _held_directly(ctx.a, v, values) else None
        if structure is not None:
            # a model's several inputs or outputs (a list or dict of arrays, as Keras reads it): each
            # array sliced alike, not the list itself (that would drop whole inputs or outputs)
            template = ctx.backend.shard_array_values if structure == "dict" else ctx.backend.shard_array_items
        new = ctx.expr(template(source(ctx.module, v)))
        replacement = lambda old, new=new: new  # noqa: E731
        ctx.plan.replace(v, replacement)
        ctx.change(v, RULE, f"{what}: {ctx.a.code(v)} sliced by rank, equal share per rank")
        _inline_slices(ctx).append((v, replacement, ctx.changes[-1]))
    return True


def _held_directly(a, leaf, values) -> bool:
    """fit() reads ``leaf`` as it is: it is one of ``values`` or an item of
    their tuple, list or dict displays -- not the argument of a conversion
    (``np.array(rows)``, whose rows are samples whatever ``rows`` is)."""
    node = leaf
    while all(node is not v for v in values):
        node = a.parent(node)
        if not isinstance(node, (cst.Element, cst.DictElement, cst.List, cst.Tuple, cst.Dict)):
            return False
    return True


def _inline_slices(ctx) -> list:
    """(argument, its replacement, the finding) of arrays sliced where fit() is handed them."""
    return _state(ctx).setdefault("inline_slices", [])


def arrays_sliced_where_bound(ctx, names: Set[str], bindings, point, row_source) -> bool:
    """Arrays ``names`` are about to be sliced where they are final (right
    after ``point``, their binding statements ``bindings[name]``): a fit()
    after it handed one of them was sliced where it is called, which would
    now divide it twice. Such a slice is taken back when fit() is handed the
    array itself (or rows kept from it: ``row_source`` peels
    ``x.astype(...)``, ``x / 255.`` off, all the way down), the fit now reading the array's share.
    False (nothing taken back) when one is handed an expression mixing it
    with other data: the caller does not slice."""
    a = ctx.a
    found = []
    for v, replacement, finding in _inline_slices(ctx):
        reads = [n for n in walk(v) if isinstance(n, cst.Name) and n.value in names
                 and any(a.statement_of(o) in bindings.get(n.value, ()) or
                         any(dataflow.is_inside(a, o, b) for b in bindings.get(n.value, ()))
                         for o, _ in a.assigned_values(n))]
        if not reads or not dataflow.after(a, v, point):
            continue
        inner = row_source(a, v)
        if not (isinstance(inner, cst.Name) and inner.value in names):
            return False
        found.append((v, replacement, finding))
    for v, replacement, finding in found:
        ctx.plan.withdraw(v, replacement)
        _inline_slices(ctx).remove((v, replacement, finding))
        ctx.changes.remove(finding)
    return True


def divide(ctx, value: cst.BaseExpression, what: str) -> None:
    new = ctx.expr(ctx.backend.divide_count(source(ctx.module, value)))
    ctx.plan.replace(value, lambda old: new)
    ctx.change(value, RULE, f"{what} divided by the number of processes")


def divide_steps_taken(ctx, fed: cst.BaseExpression) -> None:
    """``fit(dataset.take(n))``, or ``.take(n)`` after the batching anywhere
    on the flow to the training (``ds = ds.batch(32).take(STEPS)``): n
    counts steps; every rank (or, under a strategy, every global batch of
    size times the user's) would take n of them, size times the original's
    samples: n is divided, once."""
    a = ctx.a
    takes = []
    if isinstance(fed, cst.Call) and method_name(fed) == "take" and isinstance(fed.func, cst.Attribute) \
            and a.is_kind(fed.func.value, A.DATASET):
        takes.append(fed)
    takes += flow.batch_takes(a, fed)
    done = ctx.state(__name__ + ".steps_taken")
    for take in takes:
        if take in done or not take.args or take.args[0].keyword is not None:
            continue
        done.add(take)
        divide(ctx, take.args[0].value, "steps taken from the dataset")


# ---------------------------------------------------------------------------
# Sources beyond tf.data constructors: tensorflow_datasets.load, Keras
# directory readers, list_files pipelines, helpers (here or in another
# module), ImageDataGenerator flows, keras.utils.Sequence subclasses.

# The seed tfdist writes where a source would otherwise pick a random one per
# process (list_files, image_dataset_from_directory, tfds shuffle_files): the
# ranks must shuffle identically, or the shards taken after it overlap.
SHARED_SEED = "1234"


def add_kwarg(ctx, call: cst.Call, name: str, value: str) -> None:
    from .common import append_arg, kwarg
    new = ctx.expr(value)
    ctx.plan.replace(call, lambda c: append_arg(c, kwarg(name, new)))


def share_seed(ctx, src: cst.Call) -> None:
    """Sources shuffling with a per-process random seed get one shared seed."""
    a = ctx.a
    name = a.is_name(src, apis.SEEDED_SHUFFLE_SOURCES)
    if name is None or (src, "seed") in _sharded(ctx):
        return
    _sharded(ctx).add((src, "seed"))
    switch, switch_pos, seed_key, seed_pos, by_default = apis.SEEDED_SHUFFLE_SOURCES[name]
    shuffle = find_arg(src, switch, switch_pos)
    if shuffle is not None and flow.literal_false(shuffle.value) or shuffle is None and not by_default:
        return
    if find_arg(src, seed_key, seed_pos) is not None or has_star_args(src) or seed_pos is None and any(
            arg.keyword is None for arg in src.args[3:]):
        return  # the user's seed is the same on every rank
    add_kwarg(ctx, src, seed_key, SHARED_SEED)
    ctx.change(src, RULE, f"{a.code(src.func)}: one shuffle seed shared by every rank (it picks a random one per process otherwise, and the ranks' shards would overlap)")


def _later_point(ctx, dataset, src: cst.Call):
    """For a batched reader of known size (directory readers) bound to a name
    that other code also uses: the value bound to the training dataset's
    name, when sharding there is equivalent (known size, no shuffle between)."""
    a = ctx.a
    name = flow.directory_reader_name(a, src)
    if name is None:
        return None
    # reads of the name only: a later rebinding's target is not a use of the reader
    uses = a.reads_bound_to(name, src)
    if len(uses) <= 1 or not isinstance(dataset, cst.Name):
        return None
    bound = a.assigned_values(dataset)
    if len(bound) != 1 or bound[0][1] is None or bound[0][1] is src:
        return None
    value = bound[0][1]
    path = flow.path_to(a, value, src)
    if path is None or not flow.size_known(a, value) or any(method_name(c) == "shuffle" for c in path):
        return None
    return value


def _training_point(ctx, dataset, src: cst.Call):
    """The dataset given to training itself, as the place to shard a flow
    whose source also feeds an adapt(): when TensorFlow knows its size there
    (an equal share by count), no adapt() reads from it, and the ranks hold
    the same stream there -- a shuffle on the way from the source is given
    one seed on every rank (``.batch(32).shuffle(1000)`` before
    ``.map(prepare_inputs)``), so their shares of it do not overlap."""
    a = ctx.a
    path = flow.path_to(a, dataset, src)
    if path is None or not flow.size_known(a, dataset) or _adapted_downstream(ctx, dataset) is not None:
        return None
    shuffles = [c for c in path if method_name(c) in apis.RANDOM_DATASET_METHODS]
    if any(has_star_args(c) for c in shuffles):
        return None
    for c in shuffles:
        if find_arg(c, "seed", 1) is None and (c, "seed") not in _sharded(ctx):
            _sharded(ctx).add((c, "seed"))
            add_kwarg(ctx, c, "seed", SHARED_SEED)
            ctx.change(c, RULE, "one shuffle seed shared by every rank, so their shares of the shuffled stream "
                                "(taken after it) do not overlap")
    return dataset


def _after_attribute_reads(ctx, dataset, src: cst.Call):
    """For a directory reader whose own attributes are read
    (``train_ds.class_names``: a dataset made from it has none, so it cannot
    be sharded where it is built): the point of the flow to training where
    it can, the last before any shuffle -- the receiver of the shuffle
    nearest the reader, else the dataset given to training itself -- when
    the data's size is still known there. Straight-line rebindings
    (``train_ds = train_ds.cache().shuffle(1000)``) are followed to the one
    reaching each use."""
    a = ctx.a
    name = flow.directory_reader_name(a, src)
    if name is None:
        return None
    if not any(isinstance(n, cst.Name) and n.value == name and isinstance(a.parent(n), cst.Attribute)
               and a.parent(n).value is n and a.parent(n).attr.value in apis.KERAS_DIRECTORY_DATASET_ATTRIBUTES
               and any(v is src for _, v in a.assigned_values(n)) for n in walk(a.module)):
        return None
    path = flow.flow_path(a, dataset, src, 0)
    if path is None:
        return None
    shuffles = [c for c in path if method_name(c) in apis.RANDOM_DATASET_METHODS]
    point = shuffles[-1].func.value if shuffles else dataset
    return point if flow.size_known(a, point) else None


# --- tensorflow_datasets.load ------------------------------------------------


def _tfds_fixed_file_order(ctx, src: cst.Call) -> None:
    """shuffle_files=True shuffles the files with a random seed per process:
    give every rank the same file order, so record shards stay disjoint."""
    a = ctx.a
    if (src, "seed") in _sharded(ctx):
        return
    _sharded(ctx).add((src, "seed"))
    sf = find_arg(src, "shuffle_files", apis.TFDS_LOAD_POS["shuffle_files"])
    if sf is None or not flow.literal_true(sf.value):
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


def _shard_after(ctx, assign: cst.Assign, name: str, src: cst.Call, what: str) -> None:
    key = (assign, name)
    if key in _sharded(ctx):
        return
    _sharded(ctx).add(key)
    stmt = ctx.a.statement_of(assign)
    template = _conditional_template(ctx, assign, ctx.backend.shard_dataset_known_size("{inner}")).replace("{inner}", name)
    ctx.plan.insert_after(stmt, ctx.stmts(f"{name} = {template}", comment=ctx.say("{engine}: an equal, disjoint share of the dataset per rank.")))
    ctx.change(assign, RULE, f"{what}: {name} (from {ctx.a.code(src.func)}) sharded by rank, equal share per rank")


def _prepare_source(ctx, src: cst.Call) -> None:
    if ctx.a.is_name(src, apis.TFDS_LOAD):
        _tfds_fixed_file_order(ctx, src)
    else:
        share_seed(ctx, src)


def _shard_unresolved(ctx, expr, what: str, seen=None) -> bool:
    """Datasets the type inference does not follow: names unpacked from
    tfds.load(with_info=True / a list of splits) or from a directory reader
    with subset="both", ``splits["train"]`` of tfds.load(split=None), and
    datasets returned by a helper function of another project module."""
    a = ctx.a
    seen = seen if seen is not None else set()
    if id(expr) in seen:
        return False
    seen.add(id(expr))
    if isinstance(expr, cst.Call):
        f = expr.func
        if isinstance(f, cst.Attribute) and f.attr.value in apis.DATASET_METHODS:
            return _shard_unresolved(ctx, f.value, what, seen)
        passed = flow.passed_datasets(a, expr) if isinstance(f, cst.Name) else None
        if passed:
            # a helper of this module only transforming the datasets it is
            # handed (unpacked from tfds.load, ...): those are divided
            return all([_shard_passed(ctx, arg, what) for arg in passed])
        return _shard_external_helper(ctx, expr, what)
    if isinstance(expr, cst.Subscript):
        src = flow.list_of_splits(a, expr.value) if flow.integer_index(expr) is not None else None
        if src is not None:  # splits[1] of tfds.load(split=[...])
            if expr not in _sharded(ctx):
                _sharded(ctx).add(expr)
                _prepare_source(ctx, src)
                if _wrap_node(ctx, expr, ctx.backend.shard_dataset_known_size("{inner}")):
                    ctx.change(expr, RULE, f"{what}: split {a.code(expr)} of {a.code(src.func)}(split=[...]) sharded by "
                                           f"rank, equal share per rank")
            return True
        if _dict_of_splits(ctx, expr.value):
            if expr not in _sharded(ctx):
                _sharded(ctx).add(expr)
                if _wrap_node(ctx, expr, ctx.backend.shard_dataset_known_size("{inner}")):
                    ctx.change(expr, RULE, f"{what}: split {a.code(expr)} sharded by rank, equal share per rank")
            return True
        return False
    if isinstance(expr, cst.Name):
        found = False
        for origin, value in a.assigned_values(expr):
            if value is not None:
                found |= _shard_unresolved(ctx, value, what, seen)
                continue
            if isinstance(origin, cst.Param):
                # a helper's parameter: what every call of the helper hands it,
                # each divided where it is built (all of them, or a warning)
                passed = a.parameter_values(origin)
                found |= bool(passed) and all([_shard_unresolved(ctx, v, what, set(seen)) for v in passed])
                continue
            if not isinstance(origin, cst.Name):
                continue
            unpack = flow.unpacked(a, origin)
            if unpack is None:
                continue
            assign, path = unpack
            kind, src = flow.tuple_source_element(a, assign.value, path)
            if kind == "dataset":
                _prepare_source(ctx, src)
                _shard_after(ctx, assign, origin.value, src, what)
                found = True
            elif isinstance(assign.value, cst.Tuple):  # train, test = splits["train"], splits["test"]
                for element in a.tuple_element_values(origin):
                    found |= _shard_unresolved(ctx, element, what, seen)
            elif isinstance(assign.value, cst.Call):
                elements = a.tuple_element_values(origin)
                if elements:  # train, val = load_data(): the element each return of this module's helper has there
                    found |= all([shard_dataset(ctx, element, what) for element in elements])
                else:  # train, test, info = utils.create_dataset(...) of another module
                    found |= _shard_external_helper(ctx, assign.value, what, (assign, origin.value, path))
        return found
    return False


def _dict_of_splits(ctx, expr) -> bool:
    """expr is the dict tfds.load(split=None) returns."""
    a = ctx.a
    if not isinstance(expr, cst.Name):
        return False
    for origin, value in a.assigned_values(expr):
        if isinstance(value, cst.Call) and a.is_name(value, apis.TFDS_LOAD) and flow.tfds_shape(a, value) == ("dict", False):
            _prepare_source(ctx, value)
            return True
        if value is None and isinstance(origin, cst.Name):
            unpack = flow.unpacked(a, origin)
            if unpack is not None:
                kind, src = flow.tuple_source_element(a, unpack[0].value, unpack[1])
                if kind == "dict":
                    _prepare_source(ctx, src)
                    return True
    return False


# --- helpers -----------------------------------------------------------------


def _shard_call_site(ctx, call: cst.Call, helper: str, known: bool, batched: bool, shuffled: bool,
                     what: str, why: str, unpacked=None) -> bool:
    """Shard what a helper returns at its call -- or, with ``unpacked``
    (assign, name, path), the one dataset of its tuple bound to name, right
    after that assignment."""
    key = call if unpacked is None else (unpacked[0], unpacked[1])
    if key in _sharded(ctx):
        return True
    _sharded(ctx).add(key)
    if known:
        template = ctx.backend.shard_dataset_known_size("{inner}")
    elif not batched:
        template = ctx.backend.shard_dataset("{inner}")
    else:  # batches of any shapes, in whole rounds, where the engine can
        template = ctx.backend.shard_in_rounds("{inner}")
    if template is None:
        ctx.warn(call, RULE, ctx.say("{helper}() returns batches of a dataset of unknown size ({why}), which cannot be cut into equal shares after batching: shard it inside {helper}() for the calls that train, where its elements are single samples (after any window() and its flat_map(), take() or skip(); before .shuffle(...) and .batch(...)), e.g. .batch({size}, drop_remainder=True).unbatch().shard({size}, {rank}), so every rank gets the same number of elements", helper=helper, why=why))
        return True
    if unpacked is not None:
        assign, name, _ = unpacked
        template = _conditional_template(ctx, assign, template).replace("{inner}", name)
        ctx.plan.insert_after(ctx.a.statement_of(assign), ctx.stmts(
            f"{name} = {template}", comment=ctx.say("{engine}: an equal, disjoint share of the dataset per rank.")))
        ctx.change(assign, RULE, f"{what}: {name}, a dataset {helper}() returns, sharded by rank where it is "
                                 f"unpacked ({why}), equal share per rank")
    elif _wrap_node(ctx, call, template):
        ctx.change(call, RULE, f"{what}: the dataset {helper}() returns sharded by rank at this call ({why}), equal share per rank")
    for src in flow.dataset_sources(ctx.a, call, through_params=False):
        # a source shuffling with its own per-process seed (shuffle=True of
        # timeseries_dataset_from_array): one seed, or the shards overlap
        share_seed(ctx, src)
    if shuffled and not _seed_helper_shuffles(ctx, call, helper):
        ctx.warn(call, RULE, f"{helper}() shuffles before this shard: each rank takes 1/size of its own shuffled stream (equal step counts, but shares may overlap); for disjoint shares, shard inside {helper}() before .shuffle(...)")
    return True


def _seed_helper_shuffles(ctx, call: cst.Call, helper: str) -> bool:
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
    seeded = ctx.state(__name__ + ".seeded_shuffles")
    for c in shuffles:
        if find_arg(c, "seed", 1) is None and c not in seeded:
            seeded.add(c)
            add_kwarg(ctx, c, "seed", SHARED_SEED)
            ctx.change(c, RULE, f"{helper}() shuffles with a fixed seed, the same on every rank, so the shares "
                                "each rank takes after it are disjoint")
    return True


def _shard_passed(ctx, arg: cst.BaseExpression, what: str) -> bool:
    """Shard a dataset handed to a helper: a name is sharded at the call
    itself (its other uses -- an ``adapt``, a look at a few elements -- keep
    the whole dataset) when its size is known there and nothing shuffles it
    on the way; anything else at its sources."""
    a = ctx.a
    if not isinstance(arg, cst.Name) or not flow.size_known(a, arg) or "shuffle" in flow.chain_methods(a, arg):
        return shard_dataset(ctx, arg, what)
    if arg in _sharded(ctx):
        return True
    _sharded(ctx).add(arg)
    for src in flow.dataset_sources(a, arg):
        _prepare_source(ctx, src)
    if _wrap_node(ctx, arg, ctx.backend.shard_dataset_known_size("{inner}")):
        ctx.change(arg, RULE, f"{what}: {arg.value} sharded by rank where it is handed to "
                              f"{a.code(a.parent(a.parent(arg)).func)}(), equal share per rank")
    return True


def _shard_local_helper(ctx, call: cst.Call, what: str) -> bool:
    a = ctx.a
    if call in _sharded(ctx):
        return True
    passed = flow.passed_datasets(a, call)
    if passed is not None:
        # the helper only transforms the dataset it is given: shard that
        # dataset where it is passed, before any shuffle or batch of the helper
        return all([_shard_passed(ctx, arg, what) for arg in passed])
    methods = flow.chain_methods(a, call)
    known = flow.size_known(a, call)
    batched = any(m in apis.BATCHING_DATASET_METHODS for m in methods)
    if not known and batched and _shard_inside_helper(ctx, call, what):
        return True
    return _shard_call_site(ctx, call, a.code(call.func), known, batched, "shuffle" in methods,
                            what, "it has other calls, divided on their own or not at all")


def _shard_inside_helper(ctx, call: cst.Call, what: str) -> bool:
    """A helper of this module returning batches of a dataset of unknown
    size (windows of a series, records of files) cannot be divided at its
    call sites with an equal count per rank; when every call of it feeds
    training -- fit()'s data or validation data, which are both divided --
    it is divided inside, once, where its own dataset is built, and so every
    call gets its share. False (nothing edited) otherwise."""
    a = ctx.a
    fdefs = a.local_functions(call.func)
    if len(fdefs) != 1:
        return False
    fdef = fdefs[0]
    sites = flow.call_sites(a, fdef)
    rets = returned_values(fdef)
    if not sites or not rets or not all(flow.dataset_sources(a, r, through_params=False) for r in rets):
        return False
    if all(_feeds_fit_only(a, site) for site in sites):
        _sharded(ctx).update(sites)
        for r in rets:
            shard_dataset(ctx, r, f"{what} ({call.func.value}() makes the data of every fit() that calls it)")
        return True
    uses = [_site_use(a, site) for site in sites]
    if None in uses or "train" not in uses:
        return False
    # Some calls train, others only look at the data or evaluate on it: the
    # helper shards when asked to, and only the training calls ask.
    flag = _new_parameter_name(a, fdef, "shard_by_rank")
    _conditional_shards(ctx)[id(fdef)] = flag
    _sharded(ctx).update(sites)
    for r in rets:
        shard_dataset(ctx, r, f"{what} ({call.func.value}(..., {flag}=True) makes the data of the calls that train "
                              f"on it)")
    ctx.plan.replace(fdef.params, lambda params: _with_keyword_only(params, flag))
    ctx.change(fdef, RULE, f"{fdef.name.value}() shards its dataset by rank when called with {flag}=True (its calls "
                           f"that feed training); its other calls (a look, evaluate/predict) get the whole data as before")
    for site, use in zip(sites, uses):
        if use == "train":
            ctx.plan.replace(site, lambda c: append_arg(c, kwarg(flag, cst.Name("True"))))
            ctx.change(site, RULE, f"{fdef.name.value}(..., {flag}=True): this call feeds training (fit() or a loop "
                                   f"stepping an optimizer), so its dataset is this rank's equal share")
    return True


def _conditional_shards(ctx) -> dict:
    """id(helper def) -> the parameter that turns its shard on."""
    return ctx.state(__name__ + ".conditional_shards", dict)


def _conditional_template(ctx, node: cst.CSTNode, template: str) -> str:
    """template (of ``{inner}``), applied only when the helper node is in was asked to shard."""
    fdef = ctx.a.enclosing_function(node)
    flag = _conditional_shards(ctx).get(id(fdef)) if fdef is not None else None
    if flag is None:
        return template
    return "{inner}.apply(lambda ds: " + template.replace("{inner}", "ds") + f" if {flag} else ds)"


def _new_parameter_name(a, fdef: cst.FunctionDef, base: str) -> str:
    used = {n.value for n in walk(fdef) if isinstance(n, cst.Name)}
    name, i = base, 2
    while name in used:
        name, i = f"{base}_{i}", i + 1
    return name


def _with_keyword_only(params: cst.Parameters, name: str) -> cst.Parameters:
    """params plus a keyword-only ``name=False`` (after ``*`` or ``*args``)."""
    new = cst.Param(name=cst.Name(name), default=cst.Name("False"),
                    equal=cst.AssignEqual(whitespace_before=cst.SimpleWhitespace(""),
                                          whitespace_after=cst.SimpleWhitespace("")))
    star = params.star_arg
    if not isinstance(star, (cst.Param, cst.ParamStar)):
        star = cst.ParamStar()
    return params.with_changes(star_arg=star, kwonly_params=[*params.kwonly_params, new])


def _site_use(a, site: cst.Call, depth: int = 0) -> Optional[str]:
    """What a helper call's dataset is used for: "train" when it reaches
    fit()'s training or validation data, or a loop that trains on it
    (directly or through the name it is bound to; any other use then sees
    the shard too), "other" when every use only evaluates or looks
    (evaluate/predict, a loop that steps no optimizer, list()/print()),
    None when tfdist cannot tell."""
    parent = a.parent(site)
    if isinstance(parent, cst.Assign) and parent.value is site and len(parent.targets) == 1 \
            and isinstance(parent.targets[0].target, cst.Name):
        reads = a.reads_bound_to(parent.targets[0].target.value, site)
    else:
        reads = [site]
    uses = [_read_use(a, r, depth) for r in reads]
    if "train" in uses:
        return "train"
    # a name never read (rebound before any use) does not train either
    return "other" if all(u == "look" for u in uses) else None


def _read_use(a, node: cst.CSTNode, depth: int = 0) -> Optional[str]:
    """"train" (fit()'s data, or iterated by a loop that steps an optimizer
    or runs a collective), "look" (evaluate/predict, a loop that does
    neither, a built-in like list() whose value is dropped) or None."""
    par = a.parent(node)
    if isinstance(par, cst.Arg) and _fit_data_argument(a, par):
        return "train"
    child = node
    for anc in a.ancestors(node):
        if isinstance(anc, cst.For) and child is anc.iter:
            free = all(rank0_io.collective_free(a, c) for c in walk(anc.body) if isinstance(c, cst.Call))
            return "look" if free else "train"
        if isinstance(anc, cst.CompFor) and child is anc.iter:
            # [lengths for _, lengths, _ in ds.take(1000)]: what the comprehension computes decides
            comp = a.parent(anc)
            reading = {id(c) for c in walk(anc.iter)}
            free = all(rank0_io.collective_free(a, c) for c in walk(comp) if isinstance(c, cst.Call)
                       and id(c) not in reading)
            return "look" if free else None
        if isinstance(anc, cst.Attribute) and anc.value is child and anc.attr.value in apis.DATASET_METHODS:
            child = anc
        elif isinstance(anc, cst.Call) and anc.func is child:
            child = anc
        elif isinstance(anc, cst.Arg):
            call = a.parent(anc)
            if not isinstance(call, cst.Call):
                return None
            if method_name(call) in apis.KERAS_VERBOSE_METHODS:
                return "look"
            passed = flow.passed_datasets(a, call) if depth < 4 else None
            if passed and any(p is anc.value for p in passed):
                # crop(train_set): a helper of this module transforming the
                # dataset it is handed; what its result is used for decides
                use = _site_use(a, call, depth + 1)
                return "look" if use == "other" else use
            if not a.names(call) & apis.READ_ONLY_BUILTINS:
                return None
            child = anc  # list(ds), enumerate(ds): what they feed decides
        elif isinstance(anc, cst.Call) and isinstance(child, cst.Arg):
            child = anc
        elif isinstance(anc, cst.Expr):
            return "look"  # a value computed and dropped (shown in a notebook)
        else:
            return None
    return None


def _feeds_fit_only(a, value: cst.BaseExpression) -> bool:
    """Is this dataset (a call's value) only ever handed to fit() as its
    training or validation data -- directly, or through a name bound to it?"""
    parent = a.parent(value)
    if isinstance(parent, cst.Arg):
        return _fit_data_argument(a, parent)
    stmt = a.statement_of(value)
    if not (isinstance(parent, cst.Assign) and parent.value is value and len(parent.targets) == 1
            and isinstance(parent.targets[0].target, cst.Name)):
        return False
    name = parent.targets[0].target.value
    reads = a.reads_bound_to(name, value)
    return bool(reads) and stmt is not None and all(
        isinstance(a.parent(n), cst.Arg) and _fit_data_argument(a, a.parent(n)) for n in reads)


def _fit_data_argument(a, arg: cst.Arg) -> bool:
    call = a.parent(arg)
    if not isinstance(call, cst.Call) or method_name(call) not in apis.KERAS_FIT_METHODS:
        return False
    return any(fit_arg(call, key) is arg for key in ("x", "validation_data"))


def _shard_external_helper(ctx, call: cst.Call, what: str, unpacked=None) -> bool:
    """``make_dataset(...)`` imported from another module of the project;
    with ``unpacked`` (assign, name, index path), the dataset at that place
    of the tuple it returns (``train, test, info = utils.create_dataset(...)``),
    sharded where it is unpacked."""
    if unpacked is not None:
        found = flow.external_returned(ctx.a, call, unpacked[2])
        if found is None:
            return False
        other, fdef, rets = found
    else:
        found = flow.external_function(ctx, call)
        if found is None:
            return False
        other, fdef = found
        rets = returned_values(fdef)
        if not any(other.dataset_sources(r) for r in rets):
            return False
    arrays = flow.external_array_arguments(other, fdef, call) if unpacked is None else None
    if arrays:
        # the helper slices arrays it is handed: slice them where they are
        # handed to it, before any shuffle of the helper (disjoint shares)
        return shard_arrays(ctx, arrays, f"{what} ({ctx.a.code(call.func)}() of another module makes its dataset of them)")
    known = all(flow.size_known(other, r) for r in rets)
    methods = [m for r in rets for m in flow.chain_methods(other, r)]
    name = ctx.a.code(call.func)
    shuffled = "shuffle" in methods and not external_shuffles_alike(ctx, other, fdef, call, name)
    return _shard_call_site(ctx, call, name, known, any(m in ("batch", "padded_batch") for m in methods),
                            shuffled, what, "it is defined in another module", unpacked)


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
    from . import samplers  # samplers reads this module's tables
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
        if flow.same_on_every_rank(other, seed.value):
            continue
        param = flow.helper_param(other, fdef, seed.value)
        if param is None:
            return False
        given = find_arg(call, param.name.value, params.index(param))
        if given is not None:
            if not flow.same_on_every_rank(ctx.a, given.value):
                return False
        elif isinstance(param.default, cst.Name) and param.default.value == "None":
            missing.append(param.name.value)
        elif param.default is None or not flow.same_on_every_rank(other, param.default):
            return False  # else a default seed written as a number: the same on every rank
    for name in sorted(set(missing)):
        add_kwarg(ctx, call, name, SHARED_SEED)
        ctx.change(call, RULE, f"{helper}() shuffles by its {name} argument: one seed given, the same on every "
                               "rank, so the shares each rank takes at this call are disjoint")
    return True


# --- list_files pipelines: shard records, not files -------------------------


def _shard_records(ctx, dataset, src: cst.Call, what: str) -> None:
    """A dataset of file names: shard the records right after they are read
    (interleave / flat_map), with the equal-count cut; by file only when each
    file is one element."""
    a = ctx.a
    share_seed(ctx, src)
    path = flow.path_to(a, dataset, src) or []
    point = None
    for call in reversed(path):  # from the source towards the consumer
        if method_name(call) in apis.RECORD_READING_METHODS:
            point = call
            break
        if method_name(call) == "shuffle" and find_arg(call, "seed", 1) is None:
            ctx.warn(call, RULE, "this shuffle of file names has no seed: give it the same seed on every rank (seed=...) so the ranks' record shards are disjoint")
    if point is None:
        point = src
    elif any(arg.keyword is not None and arg.keyword.value == "deterministic" and flow.literal_false(arg.value)
             for arg in point.args):
        ctx.warn(point, RULE, "deterministic=False: records arrive in a different order on every rank, so the record shards may overlap; drop deterministic=False")
    if point in _sharded(ctx):
        return
    _sharded(ctx).add(point)
    if _wrap_node(ctx, point, ctx.backend.shard_dataset("{inner}")):
        if point is src:
            ctx.change(src, RULE, f"{what}: files sharded by rank, equal count per rank (each file is one element)")
        else:
            ctx.change(point, RULE, f"{what}: records sharded by rank right after {method_name(point)}(), equal count per rank")
