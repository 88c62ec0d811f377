"""Dividing the work: each rank reads 1/size of the data, or runs 1/size of
the steps, so one epoch still covers the data set once.

Sharding happens right at the tf.data source (before any shuffle or random
map, so the ranks' shards are disjoint) and gives every rank exactly
``len // size`` elements, so every rank runs the same number of batches:
ranks that disagree on the number of steps deadlock in an allreduce.
"""
from __future__ import annotations

from typing import List, Optional, Tuple

import libcst as cst

from .. import apis
from ..engine import analysis as A
from ..engine.analysis import _returns
from ..engine.scopes import walk
from .common import find_arg, has_star_args, is_optimizer_step, method_name, source

RULE = "data-division"


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


def _wrap_node(ctx, node: cst.BaseExpression, template: str) -> None:
    """Replace node by template (made with ``{inner}`` for the dataset),
    filled with node's *updated* form, so edits inside it (a seed) survive."""
    def rewrite(upd):
        return ctx.expr(template, inner=source(ctx.module, upd))
    ctx.plan.replace(node, rewrite)


def shard_dataset(ctx, dataset: cst.BaseExpression, what: str) -> bool:
    """Shard every tf.data source ``dataset`` is built from. False if none found."""
    a = ctx.a
    shared = _shared_helpers(a, dataset)
    if shared:
        for call in shared:
            _shard_local_helper(ctx, call, what)
        return True
    sources = a.dataset_sources(dataset)
    if not sources:
        return _shard_unresolved(ctx, dataset, what)
    for src in sources:
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
            if _tfds_shape(src) != ("single", False):
                ctx.warn(src, RULE, ctx.say("this tfds.load(...) returns several datasets: shard the one used for training with .shard({size}, {rank}).take(len // {size})"))
                continue
            _tfds_fixed_file_order(ctx, src)
        share_seed(ctx, src)
        later = _later_point(ctx, dataset, src)
        why = "is also used whole elsewhere"
        if later is None:
            later = _after_attribute_reads(ctx, dataset, src)
            why = "has attributes read elsewhere (class_names) that a dataset made from it does not have"
        if later is not None:
            # The source's own dataset is used elsewhere too (a
            # TextVectorization.adapt, ...): every rank must see all of it there.
            _wrap_node(ctx, later, ctx.backend.shard_dataset_known_size("{inner}"))
            ctx.change(later, RULE, f"{what}: dataset sharded by rank where it is given to training (its source {ctx.a.code(src.func)}(...) {why}), equal share per rank")
            continue
        if ctx.a.is_name(src, apis.KNOWN_SIZE_SOURCES | apis.TFDS_LOAD | apis.KERAS_BATCHED_DATASETS):
            template = ctx.backend.shard_dataset_known_size("{inner}")
        else:
            template = ctx.backend.shard_dataset("{inner}")
        _wrap_node(ctx, src, template)
        ctx.change(src, RULE, f"{what}: dataset sharded by rank, equal share per rank")
    return True


def array_leaves(value: cst.BaseExpression) -> Optional[List[cst.BaseExpression]]:
    """The arrays a fit() argument is made of: the value itself, or -- for a
    model with several inputs or outputs -- every array of a literal tuple,
    list or dict of them (nested), in order; None when one is not an array
    named or indexed (a call, a comprehension, a ``**`` entry...)."""
    if isinstance(value, (cst.Name, cst.Attribute, cst.Subscript)):
        return [value]
    if isinstance(value, cst.Call) and isinstance(value.func, cst.Attribute) and \
            value.func.attr.value in apis.ROW_KEEPING_CONVERSIONS:
        return array_leaves(value.func.value)  # x.astype(np.float32): the rows of x, sliced before converting
    if isinstance(value, (cst.Tuple, cst.List)) and value.elements:
        items = [e.value for e in value.elements if not isinstance(e, cst.StarredElement)]
        if len(items) != len(value.elements):
            return None
    elif isinstance(value, cst.Dict) and value.elements:
        if any(not isinstance(e, cst.DictElement) for e in value.elements):
            return None
        items = [e.value for e in value.elements]
    else:
        return None
    out: List[cst.BaseExpression] = []
    for item in items:
        leaves = array_leaves(item)
        if leaves is None:
            return None
        out += leaves
    return out


def shard_arrays(ctx, values: List[cst.BaseExpression], what: str) -> bool:
    """Slice in-memory arrays (NumPy, lists, tensors) given to fit(). A
    tuple, list or dict of arrays (several inputs or outputs) is sliced
    array by array with the same rows on each: every array of one fit()
    holds the same samples in the same order, so the same strided rows keep
    the inputs and labels of a sample together."""
    leaves: List[cst.BaseExpression] = []
    for v in values:
        found = array_leaves(v)
        if found is None:
            ctx.warn(v, RULE, f"{what}: cannot slice {ctx.a.code(v)} safely; give each rank 1/size of the samples by hand")
            return False
        leaves += found
    for v in leaves:
        new = ctx.expr(ctx.backend.shard_array(source(ctx.module, v)))
        ctx.plan.replace(v, lambda old, new=new: new)
        ctx.change(v, RULE, f"{what}: {ctx.a.code(v)} sliced by rank, equal share per rank")
    return True


def divide(ctx, value: cst.BaseExpression, what: str) -> None:
    new = ctx.expr(ctx.backend.divide_count(source(ctx.module, value)))
    ctx.plan.replace(value, lambda old: new)
    ctx.change(value, RULE, f"{what} divided by the number of processes")


def divide_steps_taken(ctx, fed: cst.BaseExpression) -> None:
    """``fit(dataset.take(n))``: fit() gets batches, so n counts steps; every
    rank (or, under a strategy, every global batch of size times the user's)
    would take n of them, size times the original's samples: n is divided."""
    if isinstance(fed, cst.Call) and method_name(fed) == "take" and fed.args \
            and isinstance(fed.func, cst.Attribute) and ctx.a.is_kind(fed.func.value, A.DATASET):
        divide(ctx, fed.args[0].value, "steps taken from the dataset")


# ---------------------------------------------------------------------------
# Sources beyond tf.data constructors: tensorflow_datasets.load, Keras
# directory readers, list_files pipelines, helpers (here or in another
# module), ImageDataGenerator flows, keras.utils.Sequence subclasses.

# The seed tfdist writes where a source would otherwise pick a random one per
# process (list_files, image_dataset_from_directory, tfds shuffle_files): the
# ranks must shuffle identically, or the shards taken after it overlap.
SHARED_SEED = "1234"


def _literal_false(node) -> bool:
    return isinstance(node, cst.Name) and node.value in ("False", "None")


def _literal_true(node) -> bool:
    return node is not None and not _literal_false(node) and not (
        isinstance(node, cst.Integer) and node.value == "0")


def _add_kwarg(ctx, call: cst.Call, name: str, value: str) -> None:
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
    switch, seed_key, seed_pos, by_default = apis.SEEDED_SHUFFLE_SOURCES[name]
    shuffle = find_arg(src, switch, 1 if seed_pos is not None else None)
    if shuffle is not None and _literal_false(shuffle.value) or shuffle is None and not by_default:
        return
    if find_arg(src, seed_key, seed_pos) is not None or has_star_args(src) or any(
            arg.keyword is None for arg in src.args[3:]):
        return  # the user's seed is the same on every rank
    _add_kwarg(ctx, src, seed_key, SHARED_SEED)
    ctx.change(src, RULE, f"{a.code(src.func)}: one shuffle seed shared by every rank (it picks a random one per process otherwise, and the ranks' shards would overlap)")


def _directory_reader_name(a, src: cst.Call) -> Optional[str]:
    """The one name a directory reader (``image_dataset_from_directory``...)
    is bound to (``train_ds = reader(...)``), else None."""
    if not a.is_name(src, apis.KERAS_DIRECTORY_DATASETS):
        return None
    assign = a.parent(src)
    if not isinstance(assign, cst.Assign) or len(assign.targets) != 1 or not isinstance(assign.targets[0].target, cst.Name):
        return None
    return assign.targets[0].target.value


def _later_point(ctx, dataset, src: cst.Call):
    """For a batched reader of known size (directory readers) bound to a name
    that other code also uses: the value bound to the training dataset's
    name, when sharding there is equivalent (known size, no shuffle between)."""
    a = ctx.a
    name = _directory_reader_name(a, src)
    if name is None:
        return None
    # reads of the name only: a later rebinding's target is not a use of the reader
    uses = [n for n in walk(a.module) if isinstance(n, cst.Name) and n.value == name
            and not isinstance(a.parent(n), (cst.AssignTarget, cst.AnnAssign, cst.AugAssign))
            and any(v is src for _, v in a.assigned_values(n))]
    if len(uses) <= 1 or not isinstance(dataset, cst.Name):
        return None
    bound = a.assigned_values(dataset)
    if len(bound) != 1 or bound[0][1] is None or bound[0][1] is src:
        return None
    value = bound[0][1]
    path = _path_to(a, value, src)
    if path is None or not _size_known(a, value) or any(method_name(c) == "shuffle" for c in path):
        return None
    return value


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
    name = _directory_reader_name(a, src)
    if name is None:
        return None
    if not any(isinstance(n, cst.Name) and n.value == name and isinstance(a.parent(n), cst.Attribute)
               and a.parent(n).value is n and a.parent(n).attr.value in apis.KERAS_DIRECTORY_DATASET_ATTRIBUTES
               and any(v is src for _, v in a.assigned_values(n)) for n in walk(a.module)):
        return None
    path = _flow_path(a, dataset, src, 0)
    if path is None:
        return None
    shuffles = [c for c in path if method_name(c) in apis.RANDOM_DATASET_METHODS]
    point = shuffles[-1].func.value if shuffles else dataset
    return point if _size_known(a, point) else None


def _flow_path(a, expr, target, depth: int) -> Optional[List[cst.Call]]:
    """The dataset method calls from expr down to the source call target,
    following each name to the one binding that reaches it."""
    if expr is target:
        return []
    if depth > 20:
        return None
    if isinstance(expr, cst.Call) and isinstance(expr.func, cst.Attribute) and expr.func.attr.value in apis.DATASET_METHODS:
        rest = _flow_path(a, expr.func.value, target, depth + 1)
        return None if rest is None else [expr] + rest
    if isinstance(expr, cst.Name):
        bound = a.assigned_values(expr)
        value = bound[0][1] if len(bound) == 1 else _reaching_value(a, expr)
        return None if value is None else _flow_path(a, value, target, depth + 1)
    return None


# --- tensorflow_datasets.load ------------------------------------------------
def _tfds_shape(call: cst.Call) -> Tuple[str, bool]:
    """('single' | 'list' | 'dict', with_info) of what tfds.load returns."""
    split = find_arg(call, "split", apis.TFDS_LOAD_POS["split"])
    info = find_arg(call, "with_info")
    with_info = info is not None and _literal_true(info.value)
    if split is None or (isinstance(split.value, cst.Name) and split.value.value == "None"):
        return "dict", with_info
    if isinstance(split.value, (cst.List, cst.Tuple)):
        return "list", with_info
    return "single", with_info


def _tfds_fixed_file_order(ctx, src: cst.Call) -> None:
    """shuffle_files=True shuffles the files with a random seed per process:
    give every rank the same file order, so record shards stay disjoint."""
    a = ctx.a
    if (src, "seed") in _sharded(ctx):
        return
    _sharded(ctx).add((src, "seed"))
    sf = find_arg(src, "shuffle_files", apis.TFDS_LOAD_POS["shuffle_files"])
    if sf is None or not _literal_true(sf.value):
        return
    rc = find_arg(src, "read_config")
    module = a.code(src.func.value) if isinstance(src.func, cst.Attribute) else None
    if rc is None and module is not None:
        _add_kwarg(ctx, src, "read_config", f"{module}.ReadConfig(shuffle_seed={SHARED_SEED})")
        ctx.change(src, RULE, "shuffle_files: one file-shuffle seed shared by every rank (a random one per process would make the ranks' shards overlap)")
        return
    if rc is not None and isinstance(rc.value, cst.Call) and a.is_name(rc.value, {apis.TFDS_READ_CONFIG}):
        if find_arg(rc.value, "shuffle_seed") is None:
            _add_kwarg(ctx, rc.value, "shuffle_seed", SHARED_SEED)
            ctx.change(rc.value, RULE, "ReadConfig: one file-shuffle seed shared by every rank (a random one per process would make the ranks' shards overlap)")
        return
    ctx.warn(sf.value, RULE, f"shuffle_files: the file order must be the same on every rank for the shards to be disjoint: pass read_config=tfds.ReadConfig(shuffle_seed=<same seed on every rank>)")


def _unpacked(a, name_node: cst.Name):
    """(assign, index path) when name_node is bound by ``a, (b, c) = value``."""
    path: List[int] = []
    cur = name_node
    par = a.parent(cur)
    while isinstance(par, cst.Element):
        seq = a.parent(par)
        if not isinstance(seq, (cst.Tuple, cst.List)):
            return None
        path.insert(0, list(seq.elements).index(par))
        cur = seq
        par = a.parent(seq)
    if not path or not isinstance(par, cst.AssignTarget):
        return None
    assign = a.parent(par)
    if not isinstance(assign, cst.Assign) or len(assign.targets) != 1:
        return None
    return assign, path


def _tuple_source_element(a, value, path: List[int]):
    """What the element at ``path`` of a tuple-returning source is:
    'dataset', 'dict' (of datasets, by split) or None (info, unknown)."""
    if isinstance(value, cst.Name):  # (train, val, test) = splits, splits = tfds.load(split=[...])
        src = _list_of_splits(a, value)
        return ("dataset", src) if src is not None and len(path) == 1 else (None, None)
    if not isinstance(value, cst.Call):
        return None, None
    if a.is_name(value, apis.TFDS_LOAD):
        shape, with_info = _tfds_shape(value)
        rest = list(path)
        if with_info:
            if rest[:1] != [0]:
                return None, None
            rest = rest[1:]
        if shape == "single" and not rest:
            return "dataset", value
        if shape == "list" and len(rest) == 1:
            return "dataset", value
        if shape == "list" and not rest:
            return "list", value  # the list of splits, indexed later (splits[1])
        if shape == "dict" and not rest:
            return "dict", value
        return None, None
    if a.is_name(value, apis.KERAS_DIRECTORY_DATASETS) and len(path) == 1 and path[0] in (0, 1):
        return "dataset", value  # subset="both": (training, validation)
    return None, None


def _shard_after(ctx, assign: cst.Assign, name: str, src: cst.Call, what: str) -> None:
    key = (assign, name)
    if key in _sharded(ctx):
        return
    _sharded(ctx).add(key)
    stmt = ctx.a.statement_of(assign)
    template = ctx.backend.shard_dataset_known_size(name)
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
        return _shard_external_helper(ctx, expr, what)
    if isinstance(expr, cst.Subscript):
        src = _list_of_splits(a, expr.value) if _integer_index(expr) is not None else None
        if src is not None:  # splits[1] of tfds.load(split=[...])
            if expr not in _sharded(ctx):
                _sharded(ctx).add(expr)
                _prepare_source(ctx, src)
                _wrap_node(ctx, expr, ctx.backend.shard_dataset_known_size("{inner}"))
                ctx.change(expr, RULE, f"{what}: split {a.code(expr)} of {a.code(src.func)}(split=[...]) sharded by "
                                       f"rank, equal share per rank")
            return True
        if _dict_of_splits(ctx, expr.value):
            if expr not in _sharded(ctx):
                _sharded(ctx).add(expr)
                _wrap_node(ctx, expr, ctx.backend.shard_dataset_known_size("{inner}"))
                ctx.change(expr, RULE, f"{what}: split {a.code(expr)} sharded by rank, equal share per rank")
            return True
        return False
    if isinstance(expr, cst.Name):
        found = False
        for origin, value in a.assigned_values(expr):
            if value is not None:
                found |= _shard_unresolved(ctx, value, what, seen)
                continue
            if not isinstance(origin, cst.Name):
                continue
            unpack = _unpacked(a, origin)
            if unpack is None:
                continue
            assign, path = unpack
            kind, src = _tuple_source_element(a, assign.value, path)
            if kind == "dataset":
                _prepare_source(ctx, src)
                _shard_after(ctx, assign, origin.value, src, what)
                found = True
            elif isinstance(assign.value, cst.Tuple):  # train, test = splits["train"], splits["test"]
                for element in a.tuple_element_values(origin):
                    found |= _shard_unresolved(ctx, element, what, seen)
        return found
    return False


def _integer_index(sub: cst.Subscript) -> Optional[int]:
    """n of ``value[n]`` (a literal integer, not negative), else None."""
    if len(sub.slice) != 1 or not isinstance(sub.slice[0].slice, cst.Index):
        return None
    index = sub.slice[0].slice.value
    return int(index.value) if isinstance(index, cst.Integer) else None


def _list_of_splits(a, expr, depth: int = 0) -> Optional[cst.Call]:
    """The tfds.load call when expr is the list of datasets it returns for
    ``split=[...]`` (directly, through a name bound once, or unpacked from
    ``splits, info = tfds.load(..., with_info=True)``)."""
    if depth > 4:
        return None
    if isinstance(expr, cst.Call):
        return expr if a.is_name(expr, apis.TFDS_LOAD) and _tfds_shape(expr) == ("list", False) else None
    if not isinstance(expr, cst.Name):
        return None
    bound = a.assigned_values(expr)
    if len(bound) != 1:
        return None
    origin, value = bound[0]
    if value is not None:
        return _list_of_splits(a, value, depth + 1)
    unpack = _unpacked(a, origin) if isinstance(origin, cst.Name) else None
    if unpack is not None:
        kind, src = _tuple_source_element(a, unpack[0].value, unpack[1])
        if kind == "list":
            return src
    return None


def unpacked_source(a, origin) -> Optional[cst.Call]:
    """The source call when the name bound at origin is unpacked as one
    dataset from a source returning several (``train, val =
    image_dataset_from_directory(..., subset="both")``, ``(train, test),
    info = tfds.load(split=[...], with_info=True)``)."""
    unpack = _unpacked(a, origin) if isinstance(origin, cst.Name) else None
    if unpack is None:
        return None
    kind, src = _tuple_source_element(a, unpack[0].value, unpack[1])
    return src if kind == "dataset" else None


def split_source(a, expr) -> Optional[cst.Call]:
    """The source call when expr is one dataset taken by position from the
    list of splits a source returns (``splits[1]`` of ``tfds.load(split=[...])``)."""
    if isinstance(expr, cst.Subscript) and _integer_index(expr) is not None:
        return _list_of_splits(a, expr.value)
    if isinstance(expr, cst.Subscript):
        return _dict_of_splits_source(a, expr.value)
    return None


def _dict_of_splits_source(a, expr) -> Optional[cst.Call]:
    """The tfds.load call when expr is the dict of splits it returns (split=None)."""
    if not isinstance(expr, cst.Name):
        return None
    for origin, value in a.assigned_values(expr):
        if isinstance(value, cst.Call) and a.is_name(value, apis.TFDS_LOAD) and _tfds_shape(value) == ("dict", False):
            return value
        if value is None and isinstance(origin, cst.Name):
            unpack = _unpacked(a, origin)
            if unpack is not None:
                kind, src = _tuple_source_element(a, unpack[0].value, unpack[1])
                if kind == "dict":
                    return src
    return None


def dataset_sources(a, expr, seen=None, through_params: bool = True) -> List[cst.Call]:
    """The sources a dataset is built from (as ``Analysis.dataset_sources``),
    also through names unpacked from, and splits indexed in, a source that
    returns several datasets. ``through_params=False``: not the sources a
    function's callers hand it (those it builds itself only)."""
    seen = seen if seen is not None else set()
    if id(expr) in seen:
        return []
    seen.add(id(expr))
    if isinstance(expr, cst.Call):
        if a.is_name(expr, apis.DATASET_SOURCES):
            return [expr]
        f = expr.func
        if isinstance(f, cst.Attribute) and f.attr.value in apis.DATASET_METHODS:
            return dataset_sources(a, f.value, seen, through_params)
        if isinstance(f, cst.Name):
            return [s for fdef in a._local_functions(f) for r in _returns(fdef)
                    for s in dataset_sources(a, r, seen, through_params)]
        return []
    if isinstance(expr, cst.Subscript):
        src = split_source(a, expr)
        return [src] if src is not None else []
    if isinstance(expr, cst.Name):
        out: List[cst.Call] = []
        for origin, value in a.assigned_values(expr):
            if value is not None:
                out += dataset_sources(a, value, seen, through_params)
            elif isinstance(origin, cst.Param):
                for _call, arg in a.argument_values(origin) if through_params else ():
                    out += dataset_sources(a, arg, seen)
            else:
                src = unpacked_source(a, origin)
                if src is not None:
                    out.append(src)
                else:
                    for element in a.tuple_element_values(origin):
                        out += dataset_sources(a, element, seen, through_params)
        return [s for i, s in enumerate(out) if s not in out[:i]]
    return []


def _dict_of_splits(ctx, expr) -> bool:
    """expr is the dict tfds.load(split=None) returns."""
    a = ctx.a
    if not isinstance(expr, cst.Name):
        return False
    for origin, value in a.assigned_values(expr):
        if isinstance(value, cst.Call) and a.is_name(value, apis.TFDS_LOAD) and _tfds_shape(value) == ("dict", False):
            _prepare_source(ctx, value)
            return True
        if value is None and isinstance(origin, cst.Name):
            unpack = _unpacked(a, origin)
            if unpack is not None:
                kind, src = _tuple_source_element(a, unpack[0].value, unpack[1])
                if kind == "dict":
                    _prepare_source(ctx, src)
                    return True
    return False


# --- helpers -----------------------------------------------------------------
def _size_known(a, expr, seen=None) -> bool:
    """Does TensorFlow know this dataset's number of elements (cardinality)?"""
    seen = seen if seen is not None else set()
    if id(expr) in seen:
        return True
    seen.add(id(expr))
    if isinstance(expr, cst.Call):
        if a.is_name(expr, apis.KNOWN_SIZE_SOURCES | apis.TFDS_LOAD | apis.KERAS_BATCHED_DATASETS):
            return True
        if a.is_name(expr, apis.DATASET_SOURCES):
            return False
        f = expr.func
        if isinstance(f, cst.Attribute) and f.attr.value in apis.DATASET_METHODS:
            return f.attr.value in apis.SIZE_KEEPING_DATASET_METHODS and _size_known(a, f.value, seen)
        if isinstance(f, cst.Name):
            rets = [r for fdef in a._local_functions(f) for r in _returns(fdef)]
            return bool(rets) and all(_size_known(a, r, seen) for r in rets)
        return False
    if isinstance(expr, cst.Name):
        values = [v for _, v in a.assigned_values(expr)]
        return bool(values) and all(v is not None and _size_known(a, v, seen) for v in values)
    return False


def _chain_methods(a, expr, seen=None) -> List[str]:
    """Dataset methods applied along the way from the sources to expr."""
    seen = seen if seen is not None else set()
    if id(expr) in seen:
        return []
    seen.add(id(expr))
    out: List[str] = []
    if isinstance(expr, cst.Call):
        f = expr.func
        if isinstance(f, cst.Attribute) and f.attr.value in apis.DATASET_METHODS:
            return [f.attr.value] + _chain_methods(a, f.value, seen)
        if isinstance(f, cst.Name):
            for fdef in a._local_functions(f):
                for r in _returns(fdef):
                    out += _chain_methods(a, r, seen)
    elif isinstance(expr, cst.Name):
        for _, v in a.assigned_values(expr):
            if v is not None:
                out += _chain_methods(a, v, seen)
    return out


def _helper_calls(a, expr, seen=None) -> List[cst.Call]:
    """Calls of this module's functions that build the dataset expr is made of."""
    seen = seen if seen is not None else set()
    if id(expr) in seen:
        return []
    seen.add(id(expr))
    if isinstance(expr, cst.Call):
        if a.is_name(expr, apis.DATASET_SOURCES):
            return []
        f = expr.func
        if isinstance(f, cst.Attribute) and f.attr.value in apis.DATASET_METHODS:
            return _helper_calls(a, f.value, seen)
        if isinstance(f, cst.Name) and any(a.dataset_sources(r) for fdef in a._local_functions(f) for r in _returns(fdef)):
            return [expr]
        return []
    if isinstance(expr, cst.Name):
        return [c for _, v in a.assigned_values(expr) if v is not None for c in _helper_calls(a, v, seen)]
    return []


def _call_sites(a, fdef: cst.FunctionDef) -> List[cst.Call]:
    return [c for c in a.calls if isinstance(c.func, cst.Name) and c.func.value == fdef.name.value
            and fdef in a._local_functions(c.func)]


EVAL_METHODS = {"evaluate", "predict", "test_on_batch", "predict_on_batch"}


def _trains(a, node, depth=0) -> bool:
    """Does node run an optimizer step (directly or through local functions)?"""
    from .common import calls_in
    if depth > 4:
        return False
    for c in calls_in(node):
        if method_name(c) in ("minimize", "fit", "train_on_batch") or is_optimizer_step(a, c):
            return True
        if isinstance(c.func, cst.Name):
            if any(_trains(a, f.body, depth + 1) for f in a._local_functions(c.func)):
                return True
    return False


def _evaluation_use(a, call: cst.Call) -> bool:
    """Is what this call returns used for evaluation (evaluate/predict, or a
    loop that runs no training step), rather than for training?"""
    exprs = [call]
    cur = call
    while True:  # the chain built on it: call.batch(...).prefetch(...)
        par = a.parent(cur)
        if isinstance(par, cst.Attribute) and par.value is cur and isinstance(a.parent(par), cst.Call):
            cur = a.parent(par)
            exprs.append(cur)
            continue
        break
    names = set()
    par = a.parent(cur)
    if isinstance(par, cst.AssignTarget) or isinstance(par, cst.Assign):
        assign = par if isinstance(par, cst.Assign) else a.parent(par)
        for t in assign.targets:
            if isinstance(t.target, cst.Name):
                names.add(t.target.value)
    for c in a.calls:
        if method_name(c) in EVAL_METHODS:
            for arg in c.args:
                if arg.value in exprs or (isinstance(arg.value, cst.Name) and arg.value.value in names):
                    return True
    for loop in a.for_loops:
        it = loop.iter
        if isinstance(it, cst.Call) and isinstance(it.func, cst.Name) and it.func.value == "enumerate" and it.args:
            it = it.args[0].value
        if (it in exprs or (isinstance(it, cst.Name) and it.value in names)) and not _trains(a, loop.body):
            return True
    return False


def _shared_helpers(a, expr) -> List[cst.Call]:
    """Helper calls whose function has other callers: sharding inside it
    would change what those callers get -- and divide a second time a flow
    already sharded at its own call site (training and validation data
    built by one helper) -- so each call site is sharded instead."""
    out = []
    for call in _helper_calls(a, expr):
        fdefs = a._local_functions(call.func)
        if any(site is not call for fdef in fdefs for site in _call_sites(a, fdef)):
            out.append(call)
    return out


def _shard_call_site(ctx, call: cst.Call, helper: str, known: bool, batched: bool, shuffled: bool,
                     what: str, why: str) -> bool:
    if call in _sharded(ctx):
        return True
    _sharded(ctx).add(call)
    if known:
        template = ctx.backend.shard_dataset_known_size("{inner}")
    elif not batched:
        template = ctx.backend.shard_dataset("{inner}")
    else:
        ctx.warn(call, RULE, ctx.say("{helper}() returns batches of a dataset of unknown size ({why}): shard it inside {helper}() before .batch(...), e.g. .shard({size}, {rank}) right after the source, with every rank getting the same number of elements", helper=helper, why=why))
        return True
    _wrap_node(ctx, call, template)
    ctx.change(call, RULE, f"{what}: the dataset {helper}() returns sharded by rank at this call ({why}), equal share per rank")
    if shuffled and not _seed_helper_shuffles(ctx, call, helper):
        ctx.warn(call, RULE, f"{helper}() shuffles before this shard: each rank takes 1/size of its own shuffled stream (equal step counts, but shares may overlap); for disjoint shares, shard inside {helper}() before .shuffle(...)")
    return True


def _seed_helper_shuffles(ctx, call: cst.Call, helper: str) -> bool:
    """Give the helper's dataset shuffles the shared seed where they have
    none: every rank then shuffles in the same order each epoch, and the
    shards taken after the shuffle are disjoint. False when a shuffle cannot
    be found or seeded."""
    a = ctx.a
    shuffles = [c for fdef in a._local_functions(call.func) for c in walk(fdef.body)
                if isinstance(c, cst.Call) and isinstance(c.func, cst.Attribute) and c.func.attr.value == "shuffle"
                and a.is_kind(c.func.value, A.DATASET)]
    if not shuffles or any(find_arg(c, "seed", 1) is None and any(x.star for x in c.args) for c in shuffles):
        return False
    seeded = ctx.state(__name__ + ".seeded_shuffles")
    for c in shuffles:
        if find_arg(c, "seed", 1) is None and c not in seeded:
            seeded.add(c)
            _add_kwarg(ctx, c, "seed", SHARED_SEED)
            ctx.change(c, RULE, f"{helper}() shuffles with a fixed seed, the same on every rank, so the shares "
                                "each rank takes after it are disjoint")
    return True


def _passed_datasets(a, call: cst.Call) -> Optional[List[cst.BaseExpression]]:
    """The arguments of this call of a helper that builds no dataset of its
    own -- every source its returned dataset is made of is handed to it by
    its callers (``prepare(tfds.load("mnist", split="train"))``) -- which
    carry datasets; None when the helper has sources of its own."""
    fdefs = a._local_functions(call.func) if isinstance(call.func, cst.Name) else []
    if len(fdefs) != 1:
        return None
    fdef = fdefs[0]
    params = list(fdef.params.params)
    rets = _returns(fdef)
    if not rets or any(dataset_sources(a, r, through_params=False) for r in rets) or not any(
            a.dataset_sources(r) for r in rets):
        return None
    here = [arg for param in params for c, arg in a.argument_values(param) if c is call]
    out = [arg for arg in here if a.dataset_sources(arg) or dataset_sources(a, arg)]
    # a name bound more than once (``ds = helper(ds)``) is not followed here
    if any(isinstance(arg, cst.Name) and len(a.assigned_values(arg)) != 1 for arg in out):
        return None
    return out or None


def _shard_passed(ctx, arg: cst.BaseExpression, what: str) -> bool:
    """Shard a dataset handed to a helper: a name is sharded at the call
    itself (its other uses -- an ``adapt``, a look at a few elements -- keep
    the whole dataset) when its size is known there and nothing shuffles it
    on the way; anything else at its sources."""
    a = ctx.a
    if not isinstance(arg, cst.Name) or not _size_known(a, arg) or "shuffle" in _chain_methods(a, arg):
        return shard_dataset(ctx, arg, what)
    if arg in _sharded(ctx):
        return True
    _sharded(ctx).add(arg)
    for src in a.dataset_sources(arg):
        _prepare_source(ctx, src)
    _wrap_node(ctx, arg, ctx.backend.shard_dataset_known_size("{inner}"))
    ctx.change(arg, RULE, f"{what}: {arg.value} sharded by rank where it is handed to "
                          f"{a.code(a.parent(a.parent(arg)).func)}(), equal share per rank")
    return True


def _shard_local_helper(ctx, call: cst.Call, what: str) -> bool:
    a = ctx.a
    passed = _passed_datasets(a, call)
    if passed is not None:
        # the helper only transforms the dataset it is given: shard that
        # dataset where it is passed, before any shuffle or batch of the helper
        return all([_shard_passed(ctx, arg, what) for arg in passed])
    methods = _chain_methods(a, call)
    return _shard_call_site(ctx, call, call.func.value, _size_known(a, call),
                            any(m in ("batch", "padded_batch") for m in methods), "shuffle" in methods,
                            what, "the helper has other callers: each call is divided on its own, once")


def _shard_external_helper(ctx, call: cst.Call, what: str) -> bool:
    """``make_dataset(...)`` imported from another module of the project."""
    found = _external_function(ctx, call)
    if found is None:
        return False
    other, fdef = found
    rets = _returns(fdef)
    if not any(other.dataset_sources(r) for r in rets):
        return False
    arrays = external_array_arguments(other, fdef, call)
    if arrays:
        # the helper slices arrays it is handed: slice them where they are
        # handed to it, before any shuffle of the helper (disjoint shares)
        return shard_arrays(ctx, arrays, f"{what} ({ctx.a.code(call.func)}() of another module makes its dataset of them)")
    known = all(_size_known(other, r) for r in rets)
    methods = [m for r in rets for m in _chain_methods(other, r)]
    name = ctx.a.code(call.func)
    return _shard_call_site(ctx, call, name, known, any(m in ("batch", "padded_batch") for m in methods),
                            "shuffle" in methods, what, "it is defined in another module")


def external_array_arguments(other, fdef: cst.FunctionDef, call: cst.Call) -> Optional[List[cst.BaseExpression]]:
    """For a helper of another module whose every dataset source is
    ``from_tensor_slices`` of its own parameters (arrays it is handed, not
    rebound in it): the arrays this call hands it, in source order; None
    otherwise. Sliced alike, they keep their rows paired."""
    from .common import find_arg
    sources = [s for r in _returns(fdef) for s in other.dataset_sources(r)]
    if not sources or not all(other.is_name(s, {"tensorflow.data.Dataset.from_tensor_slices"}) for s in sources):
        return None
    params = list(fdef.params.params)
    if isinstance(fdef.params.star_arg, cst.Param) or has_star_args(call):
        return None
    out: List[cst.BaseExpression] = []
    for src in sources:
        if not src.args or src.args[0].keyword is not None and src.args[0].keyword.value != "tensors":
            return None
        leaves = array_leaves(src.args[0].value)
        if not leaves:
            return None
        for leaf in leaves:
            if not isinstance(leaf, cst.Name):
                return None
            bound = other.assigned_values(leaf)
            if len(bound) != 1 or not isinstance(bound[0][0], cst.Param) or bound[0][0] not in params:
                return None
            param = bound[0][0]
            arg = find_arg(call, param.name.value, params.index(param))
            if arg is None:
                return None
            if arg.value not in out:
                out.append(arg.value)
    return out


def _external_function(ctx, call: cst.Call):
    """(analysis of its module, FunctionDef) of a function imported from
    another module of the project (the project facts the pipeline is handed
    carry its module's source), or None."""
    from ..engine.analysis import Analysis, ProjectContext
    a = ctx.a
    if not isinstance(call.func, (cst.Name, cst.Attribute)):
        return None
    for qual in sorted(a.qualified(call.func)):
        found = a.project.functions.get(a.project.absolute(qual))
        if found is None:
            continue
        module_name, source = found
        try:
            module = cst.parse_module(source)
        except (cst.ParserSyntaxError, UnicodeDecodeError, RecursionError):
            continue
        func = qual.rpartition(".")[2]
        for stmt in module.body:
            if isinstance(stmt, cst.FunctionDef) and stmt.name.value == func:
                return Analysis(module, ProjectContext(module_name)), stmt
    return None


# --- list_files pipelines: shard records, not files -------------------------
def _path_to(a, expr, target, seen=None) -> Optional[List[cst.Call]]:
    """The dataset method calls from expr down to the source call target."""
    seen = seen if seen is not None else set()
    if id(expr) in seen:
        return None
    seen.add(id(expr))
    if expr is target:
        return []
    if isinstance(expr, cst.Call):
        f = expr.func
        if isinstance(f, cst.Attribute) and f.attr.value in apis.DATASET_METHODS:
            rest = _path_to(a, f.value, target, seen)
            return None if rest is None else [expr] + rest
        if isinstance(f, cst.Name):
            for fdef in a._local_functions(f):
                for r in _returns(fdef):
                    rest = _path_to(a, r, target, seen)
                    if rest is not None:
                        return rest
        return None
    if isinstance(expr, cst.Name):
        for _, v in a.assigned_values(expr):
            if v is not None:
                rest = _path_to(a, v, target, seen)
                if rest is not None:
                    return rest
    return None


def _shard_records(ctx, dataset, src: cst.Call, what: str) -> None:
    """A dataset of file names: shard the records right after they are read
    (interleave / flat_map), with the equal-count cut; by file only when each
    file is one element."""
    a = ctx.a
    share_seed(ctx, src)
    path = _path_to(a, dataset, src) or []
    point = None
    for call in reversed(path):  # from the source towards the consumer
        if method_name(call) in apis.RECORD_READING_METHODS:
            point = call
            break
        if method_name(call) == "shuffle" and find_arg(call, "seed", 1) is None:
            ctx.warn(call, RULE, "this shuffle of file names has no seed: give it the same seed on every rank (seed=...) so the ranks' record shards are disjoint")
    if point is None:
        point = src
    elif any(arg.keyword is not None and arg.keyword.value == "deterministic" and _literal_false(arg.value)
             for arg in point.args):
        ctx.warn(point, RULE, "deterministic=False: records arrive in a different order on every rank, so the record shards may overlap; drop deterministic=False")
    if point in _sharded(ctx):
        return
    _sharded(ctx).add(point)
    _wrap_node(ctx, point, ctx.backend.shard_dataset("{inner}"))
    if point is src:
        ctx.change(src, RULE, f"{what}: files sharded by rank, equal count per rank (each file is one element)")
    else:
        ctx.change(point, RULE, f"{what}: records sharded by rank right after {method_name(point)}(), equal count per rank")


# --- endless inputs: ``.repeat()`` with no count -------------------------------
# An input repeated forever is bounded by fit()'s steps_per_epoch (divided by
# the number of processes), not by its size: every rank runs the same number of
# steps whatever its share holds, so the finite pipeline before ``.repeat()``
# is sharded with a plain ``.shard(size, rank)`` -- before any shuffle, so the
# ranks' shares are disjoint -- where the sources themselves cannot be seen.
def shard_repeated(ctx, dataset: cst.BaseExpression, what: str) -> bool:
    """Shard the finite part of every endless pipeline dataset is made of.
    False (nothing changed) unless every way to the data ends in such a
    pipeline tfdist can shard safely."""
    a = ctx.a
    repeats = _endless_repeats(a, dataset, frozenset())
    if not repeats:
        return False
    points = []
    for rep in repeats:
        point = _shard_point(a, rep)
        if point is None:
            return False
        points.append((rep, point))
    for rep, (root, sources) in points:
        if root in _sharded(ctx):
            continue
        _sharded(ctx).add(root)
        for src in sources:
            _prepare_source(ctx, src)
        _wrap_node(ctx, root, ctx.backend.shard_dataset_plain("{inner}"))
        ctx.change(root, RULE, f"{what}: sharded by rank before .repeat() (the input repeats forever; "
                               f"steps_per_epoch, divided, bounds every rank's steps)")
    return True


def _is_endless_repeat(call: cst.Call) -> bool:
    f = call.func
    if not (isinstance(f, cst.Attribute) and f.attr.value == "repeat"):
        return False
    count = find_arg(call, "count", 0)
    if count is None:
        return True
    v = count.value
    if isinstance(v, cst.Name) and v.value == "None":
        return True
    return (isinstance(v, cst.UnaryOperation) and isinstance(v.operator, cst.Minus)
            and isinstance(v.expression, cst.Integer) and v.expression.value == "1")


def _endless_repeats(a, expr, seen) -> List[cst.Call]:
    """The ``.repeat()`` calls (no count) every way from expr to its data goes
    through; [] when one way reaches data without one, or cannot be followed."""
    if id(expr) in seen:  # the ids on the way here (a dataset may feed several ways)
        return []
    seen = seen | {id(expr)}
    if isinstance(expr, cst.Call):
        f = expr.func
        if isinstance(f, cst.Attribute) and f.attr.value in apis.DATASET_METHODS:
            if _is_endless_repeat(expr):
                return [expr]
            if f.attr.value in ("take", "concatenate", "zip"):
                return []
            return _endless_repeats(a, f.value, seen)
        combiner = a.is_name(expr, apis.DATASET_COMBINERS)
        if combiner is not None:
            arg = find_arg(expr, "datasets", apis.DATASET_COMBINERS[combiner])
            if arg is None or not isinstance(arg.value, (cst.List, cst.Tuple)) or not arg.value.elements:
                return []
            out: List[cst.Call] = []
            for el in arg.value.elements:
                if isinstance(el, cst.StarredElement):
                    return []
                sub = _endless_repeats(a, el.value, seen)
                if not sub:
                    return []
                out += [r for r in sub if r not in out]
            return out
        if isinstance(f, cst.Name):
            fdefs = a._local_functions(f)
            rets = [r for fdef in fdefs for r in _returns(fdef)]
            if len(fdefs) != 1 or not rets:
                return []
            out = []
            for r in rets:
                sub = _endless_repeats(a, r, seen)
                if not sub:
                    return []
                out += [x for x in sub if x not in out]
            return out
        return []
    if isinstance(expr, cst.Name):
        value = _reaching_value(a, expr)
        return _endless_repeats(a, value, seen) if value is not None else []
    return []


def _reaching_value(a, name: cst.Name):
    """The value a name has where it is used, for names assigned only by
    plain statements of one block (``ds = ...`` then ``ds = ds.shuffle(...)``):
    the last assignment before the use in that block or, for a use inside a
    function defined in that block and called only after every assignment,
    the last one. None when it cannot be told."""
    bound = a.assigned_values(name)
    if not bound or any(v is None or not isinstance(o, cst.Assign) for o, v in bound):
        return None
    blocks = {id(a.parent(a.statement_of(o))) for o, _ in bound}
    if len(blocks) != 1:
        return None
    block = a.parent(a.statement_of(bound[0][0]))
    use_line = a.line(name)
    stmt = a.statement_of(name)
    if stmt is not None and a.parent(stmt) is block:
        before = [v for o, v in bound if a.line(o) < use_line]
        return before[-1] if before else None
    # A use inside a function of that block: every call of it after the last assignment.
    fdef = a.enclosing_function(name)
    while fdef is not None and a.parent(a.statement_of(fdef) or fdef) is not block:
        fdef = a.enclosing_function(fdef)
    if fdef is None or a.statement_of(fdef) is not fdef:
        return None
    last = max(a.line(o) for o, _ in bound)
    uses = [use for scope in a.scopes._all_scopes for use in scope.accesses.get(fdef.name.value, ())
            if fdef in a._local_functions(use)]
    if not uses or any(not (isinstance(a.parent(u), cst.Call) and a.parent(u).func is u) or a.line(u) <= last for u in uses):
        return None
    return bound[-1][1]


def _shard_point(a, repeat: cst.Call):
    """(expression to shard, its tf.data sources) for the finite pipeline a
    ``.repeat()`` repeats: the start of its method chain, when nothing before
    that point draws random numbers per process."""
    node = repeat.func.value
    while isinstance(node, cst.Call) and isinstance(node.func, cst.Attribute) and node.func.attr.value in apis.DATASET_METHODS:
        if node.func.attr.value in ("repeat", "concatenate", "zip", "interleave", "flat_map"):
            return None
        node = node.func.value
    if _upstream_random(a, node, set()):
        return None
    return node, [s for s in a.dataset_sources(node)]


def _upstream_random(a, expr, seen) -> bool:
    """Does anything before expr draw random numbers per process (a shuffle,
    or a source shuffling with its own random seed that tfdist cannot fix)?"""
    if id(expr) in seen:
        return False
    seen.add(id(expr))
    if isinstance(expr, cst.Call):
        f = expr.func
        if isinstance(f, cst.Attribute) and f.attr.value in apis.DATASET_METHODS:
            return f.attr.value in apis.RANDOM_DATASET_METHODS or _upstream_random(a, f.value, seen)
        if isinstance(f, cst.Name):
            return any(_upstream_random(a, r, seen) for fdef in a._local_functions(f) for r in _returns(fdef))
        return False
    if isinstance(expr, cst.Name):
        value = _reaching_value(a, expr)
        if value is not None:
            return _upstream_random(a, value, seen)
        bound = a.assigned_values(expr)
        # a parameter, an unpacked or imported name: what it holds is unknown
        return not bound or any(v is None or _upstream_random(a, v, seen) for _, v in bound)
    if isinstance(expr, cst.Subscript):
        return _upstream_random(a, expr.value, seen)
    return False
