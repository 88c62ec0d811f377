"""Dividing the work along the data flow: each rank a disjoint, equal share, samples and labels
still paired.

Dividing the work: each rank reads 1/size of the data, or runs 1/size of
the steps, so one epoch still covers the data set once.

Sharding happens right at the tf.data source (before any shuffle or random
map, so the ranks' shards are disjoint) and gives every rank exactly
``len // size`` elements, so every rank runs the same number of batches:
ranks that disagree on the number of steps deadlock in an allreduce.
"""
from __future__ import annotations

from typing import List, Set
import libcst as cst
from .. import apis
from ..engine import analysis as A
from ..engine import dataflow
from ..engine.analysis import returned_values
from ..engine.scopes import walk
from .shared_seeds import add_kwarg, external_shuffles_alike, same_random_split, seed_helper_shuffles, share_seed, tfds_fixed_file_order
from ..facts.shard_points import RULE, SHARED_SEED, adapted_downstream, after_attribute_reads, conditional_shards_state, conditional_template, feeds_fit_only, global_seed_set_before, held_directly, inline_slice_sites, later_point, new_parameter_name, positional_point, sharded_state, site_use, with_keyword_only
from ..facts.syntax import append_arg, find_arg, has_star_args, kwarg, method_name, source
from ..facts import dataset_flow
from ..facts import dataset_splits
from ..facts import external_functions
from ..facts import sample_arrays


def wrap_node(ctx, node: cst.BaseExpression, template: str) -> bool:
    """Replace node by template (made with ``{inner}`` for the dataset),
    filled with node's *updated* form, so edits inside it (a seed) survive.
    False (nothing edited, a warning instead) when a preprocessing layer is
    adapted on data that would come from this shard."""
    adapt = adapted_downstream(ctx, node)
    if adapt is not None:
        ctx.warn(node, RULE, ctx.say(
            "{layer}.adapt(...) at line {line} reads data that would be sharded by rank here: each rank would adapt "
            "the layer on its own share (a TextVectorization's vocabulary is not a variable, so it would stay "
            "different on every rank); adapt it on the whole data, then shard the dataset given to training with "
            ".shard({size}, {rank}) and an equal count per rank", layer=ctx.a.code(adapt.func.value),
            line=str(ctx.a.line(adapt))))
        return False
    template = conditional_template(ctx, node, template)

    def rewrite(upd):
        return ctx.expr(template, inner=source(ctx.module, upd))
    ctx.plan.replace(node, rewrite)
    return True


def shard_dataset(ctx, dataset: cst.BaseExpression, what: str, evaluation: bool = False) -> bool:
    """Shard every tf.data source ``dataset`` is built from. False if none
    found. ``evaluation``: a set only evaluated (fit's validation data),
    never divided into fewer pieces than ranks."""
    a = ctx.a
    shared = dataset_flow.shared_helpers(a, dataset)
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
            if src not in sharded_state(ctx):
                sharded_state(ctx).add(src)
                ctx.warn(src, RULE, ctx.say("this dataset is cut into windows that are not flattened (flat_map) before it is batched: shard it by hand after the windows are flattened, with .shard({size}, {rank}) and an equal count per rank"))
            continue
        if point is not None:
            _shard_after_positional(ctx, point, src, what)
            continue
        if src in sharded_state(ctx):
            continue
        sharded_state(ctx).add(src)
        parent = ctx.a.parent(src)
        if isinstance(parent, cst.Attribute) and parent.attr.value == "shard":
            ctx.warn(src, RULE, ctx.say("the dataset is already sharded: check it is sharded by {engine} rank"))
            continue
        if ctx.a.is_name(src, apis.FILE_LEVEL_SOURCES):
            _shard_records(ctx, dataset, src, what)
            continue
        if ctx.a.is_name(src, apis.TFDS_LOAD):
            if dataset_splits.tfds_shape(ctx.a, src) != ("single", False):
                ctx.warn(src, RULE, ctx.say("this tfds.load(...) returns several datasets: shard the one used for training with .shard({size}, {rank}).take(len // {size})"))
                continue
            tfds_fixed_file_order(ctx, src)
        share_seed(ctx, src)
        for upstream in dataset_flow.row_origins(ctx.a, src):
            share_seed(ctx, upstream)  # the rows' order is its order: the same on every rank
        later = later_point(ctx, dataset, src)
        why = "is also used whole elsewhere"
        if later is None:
            later = after_attribute_reads(ctx, dataset, src)
            why = "has attributes read elsewhere (class_names) that a dataset made from it does not have"
        if later is None and adapted_downstream(ctx, src) is not None:
            later = _training_point(ctx, dataset, src)
            why = "also feeds a preprocessing layer's adapt(), which must see all of it"
        if later is not None:
            # The source's own dataset is used elsewhere too (a
            # TextVectorization.adapt, ...): every rank must see all of it there.
            if wrap_node(ctx, later, ctx.backend.shard_dataset_known_size("{inner}")):
                ctx.change(later, RULE, f"{what}: dataset sharded by rank where it is given to training (its source {ctx.a.code(src.func)}(...) {why}), equal share per rank")
            continue
        if evaluation and ctx.a.is_name(src, apis.KERAS_BATCHED_DATASETS):
            template = ctx.backend.shard_evaluation_known_size("{inner}")  # batched: maybe fewer batches than ranks
        elif ctx.a.is_name(src, apis.KNOWN_SIZE_SOURCES | apis.TFDS_LOAD | apis.KERAS_BATCHED_DATASETS):
            template = ctx.backend.shard_dataset_known_size("{inner}")
        else:
            template = ctx.backend.shard_dataset("{inner}")
        if wrap_node(ctx, src, template):
            ctx.change(src, RULE, f"{what}: dataset sharded by rank, equal share per rank")
    return True


def _shard_after_positional(ctx, point: cst.Call, src: cst.Call, what: str) -> None:
    """Shard the flow right after ``point`` (see positional_point). Every
    shuffle before it gets the shared seed -- the ranks must hold the same
    stream there for their shards to be disjoint -- and the source itself
    is not sharded, so several flows cut from it (``take`` and ``skip``)
    are each sharded once, at their own point."""
    a = ctx.a
    if point in sharded_state(ctx):
        return
    sharded_state(ctx).add(point)
    if src in sharded_state(ctx):
        # another flow already sharded the source: sharding again here would divide twice
        cut = "window() and this flat_map()" if method_name(point) in apis.RECORD_READING_METHODS else f"{method_name(point)}()"
        ctx.warn(point, RULE, ctx.say(f"{cut} cut this dataset by the position of its elements, and another use of its source {a.code(src.func)}(...) is sharded at the source: shard each flow once, after {method_name(point)}(...), with .shard({{size}}, {{rank}}) and an equal count per rank"))
        return
    share_seed(ctx, src)
    seeded = global_seed_set_before(a, point)
    for call in dataset_flow.path_to(a, point, src) or []:
        if method_name(call) in apis.RANDOM_DATASET_METHODS and find_arg(call, "seed", 1) is None and not seeded \
                and not has_star_args(call) and (call, "seed") not in sharded_state(ctx):
            sharded_state(ctx).add((call, "seed"))
            add_kwarg(ctx, call, "seed", SHARED_SEED)
            ctx.change(call, RULE, f"{method_name(call)}() before {method_name(point)}(): one seed shared by every rank, so the ranks hold the same stream where it is sharded and their shares are disjoint")
    known = dataset_flow.size_known(a, point)
    template = ctx.backend.shard_dataset_known_size("{inner}") if known else ctx.backend.shard_dataset("{inner}")
    if wrap_node(ctx, point, template):
        ctx.change(point, RULE, f"{what}: dataset sharded by rank after {method_name(point)}(...), which depends on the order of the whole stream, equal share per rank")


def shard_arrays(ctx, values: List[cst.BaseExpression], what: str) -> bool:
    """Slice in-memory arrays (NumPy, lists, tensors) given to fit(). A
    tuple, list or dict of arrays (several inputs or outputs) is sliced
    array by array with the same rows on each: every array of one fit()
    holds the same samples in the same order, so the same strided rows keep
    the inputs and labels of a sample together."""
    same_random_split(ctx, values)
    leaves: List[cst.BaseExpression] = []
    for v in values:
        found = sample_arrays.array_leaves(v, ctx.a)
        if found is None:
            ctx.warn(v, RULE, f"{what}: cannot slice {ctx.a.code(v)} safely; give each rank 1/size of the samples by hand")
            return False
        mixed = [leaf for leaf in found if held_directly(ctx.a, leaf, [v]) and sample_arrays.array_structure(ctx.a, leaf) == "mixed"]
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
        structure = sample_arrays.array_structure(ctx.a, v) if held_directly(ctx.a, v, values) else None
        if structure is not None:
            # a model's several inputs or outputs (a list or dict of arrays, as Keras reads it): each
            # array sliced alike, not the list itself (that would drop whole inputs or outputs)
            template = ctx.backend.shard_array_values if structure == "dict" else ctx.backend.shard_array_items
        new = ctx.expr(template(source(ctx.module, v)))
        replacement = lambda old, new=new: new  # noqa: E731
        ctx.plan.replace(v, replacement)
        ctx.change(v, RULE, f"{what}: {ctx.a.code(v)} sliced by rank, equal share per rank")
        inline_slice_sites(ctx).append((v, replacement, ctx.changes[-1]))
    return True


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
    for v, replacement, finding in inline_slice_sites(ctx):
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
        inline_slice_sites(ctx).remove((v, replacement, finding))
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
    takes += dataset_flow.batch_takes(a, fed)
    done = ctx.state("data_division.steps_taken")
    for take in takes:
        if take in done or not take.args or take.args[0].keyword is not None:
            continue
        done.add(take)
        divide(ctx, take.args[0].value, "steps taken from the dataset")


def _training_point(ctx, dataset, src: cst.Call):
    """The dataset given to training itself, as the place to shard a flow
    whose source also feeds an adapt(): when TensorFlow knows its size there
    (an equal share by count), no adapt() reads from it, and the ranks hold
    the same stream there -- a shuffle on the way from the source is given
    one seed on every rank (``.batch(32).shuffle(1000)`` before
    ``.map(prepare_inputs)``), so their shares of it do not overlap."""
    a = ctx.a
    path = dataset_flow.path_to(a, dataset, src)
    if path is None or not dataset_flow.size_known(a, dataset) or adapted_downstream(ctx, dataset) is not None:
        return None
    shuffles = [c for c in path if method_name(c) in apis.RANDOM_DATASET_METHODS]
    if any(has_star_args(c) for c in shuffles):
        return None
    for c in shuffles:
        if find_arg(c, "seed", 1) is None and (c, "seed") not in sharded_state(ctx):
            sharded_state(ctx).add((c, "seed"))
            add_kwarg(ctx, c, "seed", SHARED_SEED)
            ctx.change(c, RULE, "one shuffle seed shared by every rank, so their shares of the shuffled stream "
                                "(taken after it) do not overlap")
    return dataset


def _shard_after(ctx, assign: cst.Assign, name: str, src: cst.Call, what: str) -> None:
    key = (assign, name)
    if key in sharded_state(ctx):
        return
    sharded_state(ctx).add(key)
    stmt = ctx.a.statement_of(assign)
    template = conditional_template(ctx, assign, ctx.backend.shard_dataset_known_size("{inner}")).replace("{inner}", name)
    ctx.plan.insert_after(stmt, ctx.stmts(f"{name} = {template}", comment=ctx.say("{engine}: an equal, disjoint share of the dataset per rank.")))
    ctx.change(assign, RULE, f"{what}: {name} (from {ctx.a.code(src.func)}) sharded by rank, equal share per rank")


def prepare_source(ctx, src: cst.Call) -> None:
    if ctx.a.is_name(src, apis.TFDS_LOAD):
        tfds_fixed_file_order(ctx, src)
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
        passed = dataset_flow.passed_datasets(a, expr) if isinstance(f, cst.Name) else None
        if passed:
            # a helper of this module only transforming the datasets it is
            # handed (unpacked from tfds.load, ...): those are divided
            return all([_shard_passed(ctx, arg, what) for arg in passed])
        return _shard_external_helper(ctx, expr, what)
    if isinstance(expr, cst.Subscript):
        src = dataset_splits.list_of_splits(a, expr.value) if dataset_splits.integer_index(expr) is not None else None
        if src is not None:  # splits[1] of tfds.load(split=[...])
            if expr not in sharded_state(ctx):
                sharded_state(ctx).add(expr)
                prepare_source(ctx, src)
                if wrap_node(ctx, expr, ctx.backend.shard_dataset_known_size("{inner}")):
                    ctx.change(expr, RULE, f"{what}: split {a.code(expr)} of {a.code(src.func)}(split=[...]) sharded by "
                                           f"rank, equal share per rank")
            return True
        if _dict_of_splits(ctx, expr.value):
            if expr not in sharded_state(ctx):
                sharded_state(ctx).add(expr)
                if wrap_node(ctx, expr, ctx.backend.shard_dataset_known_size("{inner}")):
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
            unpack = dataset_splits.unpacked(a, origin)
            if unpack is None:
                continue
            assign, path = unpack
            kind, src = dataset_splits.tuple_source_element(a, assign.value, path)
            if kind == "dataset":
                prepare_source(ctx, src)
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
    """expr is the dict tfds.load(split=None) returns (the call itself, or a name bound to it)."""
    src = dataset_splits.dict_of_splits_source(ctx.a, expr)
    if src is not None:
        prepare_source(ctx, src)
    return src is not None


# --- helpers -----------------------------------------------------------------


def _shard_call_site(ctx, call: cst.Call, helper: str, known: bool, batched: bool, shuffled: bool,
                     what: str, why: str, unpacked=None) -> bool:
    """Shard what a helper returns at its call -- or, with ``unpacked``
    (assign, name, path), the one dataset of its tuple bound to name, right
    after that assignment."""
    key = call if unpacked is None else (unpacked[0], unpacked[1])
    if key in sharded_state(ctx):
        return True
    sharded_state(ctx).add(key)
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
        template = conditional_template(ctx, assign, template).replace("{inner}", name)
        ctx.plan.insert_after(ctx.a.statement_of(assign), ctx.stmts(
            f"{name} = {template}", comment=ctx.say("{engine}: an equal, disjoint share of the dataset per rank.")))
        ctx.change(assign, RULE, f"{what}: {name}, a dataset {helper}() returns, sharded by rank where it is "
                                 f"unpacked ({why}), equal share per rank")
    elif wrap_node(ctx, call, template):
        ctx.change(call, RULE, f"{what}: the dataset {helper}() returns sharded by rank at this call ({why}), equal share per rank")
    for src in dataset_flow.dataset_sources(ctx.a, call, through_params=False):
        # a source shuffling with its own per-process seed (shuffle=True of
        # timeseries_dataset_from_array): one seed, or the shards overlap
        share_seed(ctx, src)
    if shuffled and not seed_helper_shuffles(ctx, call, helper):
        ctx.warn(call, RULE, f"{helper}() shuffles before this shard: each rank takes 1/size of its own shuffled stream (equal step counts, but shares may overlap); for disjoint shares, shard inside {helper}() before .shuffle(...)")
    return True


def _shard_passed(ctx, arg: cst.BaseExpression, what: str) -> bool:
    """Shard a dataset handed to a helper: a name is sharded at the call
    itself (its other uses -- an ``adapt``, a look at a few elements -- keep
    the whole dataset) when its size is known there and nothing shuffles it
    on the way; anything else at its sources."""
    a = ctx.a
    if not isinstance(arg, cst.Name) or not dataset_flow.size_known(a, arg) or "shuffle" in dataset_flow.chain_methods(a, arg):
        return shard_dataset(ctx, arg, what)
    if arg in sharded_state(ctx):
        return True
    sharded_state(ctx).add(arg)
    for src in dataset_flow.dataset_sources(a, arg):
        prepare_source(ctx, src)
    if wrap_node(ctx, arg, ctx.backend.shard_dataset_known_size("{inner}")):
        ctx.change(arg, RULE, f"{what}: {arg.value} sharded by rank where it is handed to "
                              f"{a.code(a.parent(a.parent(arg)).func)}(), equal share per rank")
    return True


def _shard_local_helper(ctx, call: cst.Call, what: str) -> bool:
    a = ctx.a
    if call in sharded_state(ctx):
        return True
    passed = dataset_flow.passed_datasets(a, call)
    if passed is not None:
        # the helper only transforms the dataset it is given: shard that
        # dataset where it is passed, before any shuffle or batch of the helper
        return all([_shard_passed(ctx, arg, what) for arg in passed])
    methods = dataset_flow.chain_methods(a, call)
    known = dataset_flow.size_known(a, call)
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
    sites = dataset_flow.call_sites(a, fdef)
    rets = returned_values(fdef)
    if not sites or not rets or not all(dataset_flow.dataset_sources(a, r, through_params=False) for r in rets):
        return False
    if all(feeds_fit_only(a, site) for site in sites):
        sharded_state(ctx).update(sites)
        for r in rets:
            shard_dataset(ctx, r, f"{what} ({call.func.value}() makes the data of every fit() that calls it)")
        return True
    uses = [site_use(a, site) for site in sites]
    if None in uses or "train" not in uses:
        return False
    # Some calls train, others only look at the data or evaluate on it: the
    # helper shards when asked to, and only the training calls ask.
    flag = new_parameter_name(a, fdef, "shard_by_rank")
    conditional_shards_state(ctx)[id(fdef)] = flag
    sharded_state(ctx).update(sites)
    for r in rets:
        shard_dataset(ctx, r, f"{what} ({call.func.value}(..., {flag}=True) makes the data of the calls that train "
                              f"on it)")
    ctx.plan.replace(fdef.params, lambda params: with_keyword_only(params, flag))
    ctx.change(fdef, RULE, f"{fdef.name.value}() shards its dataset by rank when called with {flag}=True (its calls "
                           f"that feed training); its other calls (a look, evaluate/predict) get the whole data as before")
    for site, use in zip(sites, uses):
        if use == "train":
            ctx.plan.replace(site, lambda c: append_arg(c, kwarg(flag, cst.Name("True"))))
            ctx.change(site, RULE, f"{fdef.name.value}(..., {flag}=True): this call feeds training (fit() or a loop "
                                   f"stepping an optimizer), so its dataset is this rank's equal share")
    return True


def _shard_external_helper(ctx, call: cst.Call, what: str, unpacked=None) -> bool:
    """``make_dataset(...)`` imported from another module of the project;
    with ``unpacked`` (assign, name, index path), the dataset at that place
    of the tuple it returns (``train, test, info = utils.create_dataset(...)``),
    sharded where it is unpacked."""
    if unpacked is not None:
        found = dataset_flow.external_returned(ctx.a, call, unpacked[2])
        if found is None:
            return False
        other, fdef, rets = found
    else:
        found = external_functions.external_function(ctx, call)
        if found is None:
            return False
        other, fdef = found
        rets = returned_values(fdef)
        if not any(other.dataset_sources(r) for r in rets):
            return False
    arrays = sample_arrays.external_array_arguments(other, fdef, call) if unpacked is None else None
    if arrays:
        # the helper slices arrays it is handed: slice them where they are
        # handed to it, before any shuffle of the helper (disjoint shares)
        return shard_arrays(ctx, arrays, f"{what} ({ctx.a.code(call.func)}() of another module makes its dataset of them)")
    known = all(dataset_flow.size_known(other, r) for r in rets)
    methods = [m for r in rets for m in dataset_flow.chain_methods(other, r)]
    name = ctx.a.code(call.func)
    shuffled = "shuffle" in methods and not external_shuffles_alike(ctx, other, fdef, call, name)
    return _shard_call_site(ctx, call, name, known, any(m in ("batch", "padded_batch") for m in methods),
                            shuffled, what, "it is defined in another module", unpacked)


# --- list_files pipelines: shard records, not files -------------------------


def _shard_records(ctx, dataset, src: cst.Call, what: str) -> None:
    """A dataset of file names: shard the records right after they are read
    (interleave / flat_map), with the equal-count cut; by file only when each
    file is one element."""
    a = ctx.a
    share_seed(ctx, src)
    path = dataset_flow.path_to(a, dataset, src) or []
    point = None
    unseeded = []
    for call in reversed(path):  # from the source towards the consumer
        if method_name(call) in apis.RECORD_READING_METHODS:
            point = call
            break
        if method_name(call) == "shuffle" and find_arg(call, "seed", 1) is None:
            unseeded.append(call)
    for call in unseeded if point is not None else ():  # file names shuffled before their records are sharded
        ctx.warn(call, RULE, "this shuffle of file names has no seed: give it the same seed on every rank (seed=...) "
                             "so the ranks' record shards are disjoint")
    if point is None:
        point = src  # the files are sharded before any shuffle: the order is then the rank's own
    elif any(arg.keyword is not None and arg.keyword.value == "deterministic" and dataset_splits.literal_false(arg.value)
             for arg in point.args):
        ctx.warn(point, RULE, "deterministic=False: records arrive in a different order on every rank, so the record shards may overlap; drop deterministic=False")
    if point is not src:  # the source itself: marked as sharded by the caller, not yet sharded
        if point in sharded_state(ctx):
            return
        sharded_state(ctx).add(point)
    if wrap_node(ctx, point, ctx.backend.shard_dataset("{inner}")):
        if point is src:
            ctx.change(src, RULE, f"{what}: files sharded by rank, equal count per rank (each file is one element)")
        else:
            ctx.change(point, RULE, f"{what}: records sharded by rank right after {method_name(point)}(), equal count per rank")
