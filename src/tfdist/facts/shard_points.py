"""Where the work can be divided: the point along a data flow where rows are still whole and
paired.

Dividing the work: each rank reads 1/size of the data, or runs 1/size of
the steps, so one epoch still covers the data set once.

Sharding happens right at the tf.data source (before any shuffle or random
map, so the ranks' shards are disjoint) and gives every rank exactly
``len // size`` elements, so every rank runs the same number of batches:
ranks that disagree on the number of steps deadlock in an allreduce.
"""
from __future__ import annotations

from typing import Optional
import libcst as cst
from .. import apis
from ..engine.memo import fact
from ..engine.scopes import walk
from .syntax import find_arg, fit_arg, has_star_args, method_name
from . import collectives
from . import dataset_flow
from . import kinds
from . import writes


RULE = kinds.DATA_DIVISION


# State kept per conversion (ctx.state): what this module already edited,
# so the rules reaching the same node never edit it twice.
def sharded_state(ctx) -> set:
    """Sources, seeds and counts already divided."""
    return ctx.state("data_division.sharded")


def wrapped_state(ctx) -> set:
    """Sequences given to fit() already wrapped."""
    return ctx.state("data_division.wrapped")


def division_state(ctx) -> dict:
    return ctx.state("data_division", dict)


def adapted_downstream(ctx, node: cst.BaseExpression):
    """The first ``layer.adapt(data)`` whose data flows from node, for an
    engine whose shard holds only the rank's share wherever it is read."""
    if not ctx.backend.shard_is_in_place:
        return None
    a = ctx.a
    for call in a.calls:
        if method_name(call) != "adapt" or not isinstance(call.func, cst.Attribute):
            continue
        data = find_arg(call, "data", 0)
        if data is not None and dataset_flow.path_to(a, data.value, node) is not None:
            return call
    return None


@fact
def positional_point(a, dataset, src: cst.Call):
    """The last call on the way from ``src`` to ``dataset``, before it is
    batched, whose output depends on the position or the neighbours of each
    element (``window``, ``take``/``skip``, ...): the shard goes after it, so
    the windows are cut from the whole series and a split by count splits
    the same stream on every rank. None when there is none; False when its
    elements are still datasets (windows never flattened) where it is batched."""
    path = dataset_flow.path_to(a, dataset, src)
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


@fact
def seeded_earlier_in(a, stmt) -> bool:
    """NumPy's global generator is seeded by a statement before ``stmt`` in its block."""
    body = list(a.parent(stmt).body) if hasattr(a.parent(stmt), "body") else []
    if stmt not in body:
        return False
    return any(a.names(c) & apis.NUMPY_GLOBAL_SEED_SETTERS for s in body[:body.index(stmt)]
               for c in walk(s) if isinstance(c, cst.Call))


@fact
def numpy_order_draw(other, c: cst.Call) -> bool:
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


@fact
def dataframe_draw(a, call) -> bool:
    """``df.sample(frac=1)``: a pandas DataFrame method drawing rows at random
    (apis.DATAFRAME_RANDOM_DRAWS), on a receiver known to be a DataFrame."""
    return isinstance(call, cst.Call) and method_name(call) in apis.DATAFRAME_RANDOM_DRAWS \
        and isinstance(call.func, cst.Attribute) and writes.object_kind(a, call.func.value) == apis.DATAFRAME


@fact
def _seeded_earlier_in_function(a, node, fdef, table) -> bool:
    """A statement of fdef's own body (not in a branch or loop of it) sets
    the seed before the statement of that body holding node (``def main():
    tf.random.set_seed(0)`` ... the loop drawing)."""
    body = list(fdef.body.body) if isinstance(fdef.body, cst.IndentedBlock) else []

    def own_statement(n):
        while n is not None and a.parent(n) is not fdef.body:
            n = a.parent(n)
        return n
    held = own_statement(node)
    if held is None or held not in body:
        return False
    return any(own_statement(c) in body[:body.index(held)] for c in a.calls
               if a.names(c) & table and a.enclosing_function(c) is fdef
               and isinstance(a.parent(a.parent(c)), cst.SimpleStatementLine)
               and a.parent(a.parent(a.parent(c))) is fdef.body)


@fact
def global_seed_set_before(a, node, setters_table=None) -> bool:
    """Does the script set TensorFlow's global seed (tf.random.set_seed,
    keras.utils.set_random_seed) before the code building
    ``node`` runs? Then an unseeded shuffle there draws the same order on
    every rank, and the user's own order (their split) is kept as it is. The
    code runs at its module-level statement, or, inside a function, at the
    first module-level statement calling that function (or after a
    statement of that function's own body that seeds). ``setters_table``:
    other seeding calls to look for (NumPy's)."""
    def top(n):
        while n is not None and not isinstance(a.parent(n), cst.Module):
            n = a.parent(n)
        return n
    table = setters_table if setters_table is not None else apis.TF_GLOBAL_SEED_SETTERS
    fdef = a.enclosing_function(node)
    if fdef is not None and _seeded_earlier_in_function(a, node, fdef, table):
        return True
    setters = [top(c) for c in a.calls if a.names(c) & table and a.enclosing_function(c) is None]
    if not setters:
        return False
    if fdef is None:
        runs = [top(node)]
    else:
        runs = [top(site) for site in dataset_flow.call_sites(a, fdef) if a.enclosing_function(site) is None]
    body = list(a.module.body)
    if not runs or None in runs or None in setters:
        return False
    first = min(body.index(r) for r in runs)
    return any(body.index(t) < first for t in setters)


@fact
def held_directly(a, leaf, values) -> bool:
    """fit() reads ``leaf`` as it is: it is one of ``values`` or an item of
    their tuple, list or dict displays -- not the argument of a conversion
    (``np.array(rows)``, whose rows are samples whatever ``rows`` is)."""
    node = leaf
    while all(node is not v for v in values):
        node = a.parent(node)
        if not isinstance(node, (cst.Element, cst.DictElement, cst.List, cst.Tuple, cst.Dict)):
            return False
    return True


def inline_slice_sites(ctx) -> list:
    """(argument, its replacement, the finding) of arrays sliced where fit() is handed them."""
    return division_state(ctx).setdefault("inline_slices", [])


# ---------------------------------------------------------------------------
# Sources beyond tf.data constructors: tensorflow_datasets.load, Keras
# directory readers, list_files pipelines, helpers (here or in another
# module), ImageDataGenerator flows, keras.utils.Sequence subclasses.

# The seed tfdist writes where a source would otherwise pick a random one per
# process (list_files, image_dataset_from_directory, tfds shuffle_files): the
# ranks must shuffle identically, or the shards taken after it overlap.
SHARED_SEED = "1234"


def later_point(ctx, dataset, src: cst.Call):
    """For a batched reader of known size (directory readers) bound to a name
    that other code also uses: the value bound to the training dataset's
    name, when sharding there is equivalent (known size, no shuffle between)."""
    a = ctx.a
    name = dataset_flow.directory_reader_name(a, src)
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
    path = dataset_flow.path_to(a, value, src)
    if path is None or not dataset_flow.size_known(a, value) or any(method_name(c) == "shuffle" for c in path):
        return None
    return value


def after_attribute_reads(ctx, dataset, src: cst.Call):
    """For a directory reader whose own attributes are read
    (``train_ds.class_names``: a dataset made from it has none, so it cannot
    be sharded where it is built): the point of the flow to training where
    it can, the last before any shuffle -- the receiver of the shuffle
    nearest the reader, else the dataset given to training itself -- when
    the data's size is still known there. Straight-line rebindings
    (``train_ds = train_ds.cache().shuffle(1000)``) are followed to the one
    reaching each use."""
    a = ctx.a
    name = dataset_flow.directory_reader_name(a, src)
    if name is None:
        return None
    if not any(isinstance(n, cst.Name) and n.value == name and isinstance(a.parent(n), cst.Attribute)
               and a.parent(n).value is n and a.parent(n).attr.value in apis.KERAS_DIRECTORY_DATASET_ATTRIBUTES
               and any(v is src for _, v in a.assigned_values(n)) for n in walk(a.module)):
        return None
    path = dataset_flow.flow_path(a, dataset, src, 0)
    if path is None:
        return None
    shuffles = [c for c in path if method_name(c) in apis.RANDOM_DATASET_METHODS]
    point = shuffles[-1].func.value if shuffles else dataset
    return point if dataset_flow.size_known(a, point) else None


def conditional_shards_state(ctx) -> dict:
    """id(helper def) -> the parameter that turns its shard on."""
    return ctx.state("data_division.conditional_shards", dict)


def conditional_template(ctx, node: cst.CSTNode, template: str) -> str:
    """template (of ``{inner}``), applied only when the helper node is in was asked to shard."""
    fdef = ctx.a.enclosing_function(node)
    flag = conditional_shards_state(ctx).get(id(fdef)) if fdef is not None else None
    if flag is None:
        return template
    return "{inner}.apply(lambda ds: " + template.replace("{inner}", "ds") + f" if {flag} else ds)"


@fact
def new_parameter_name(a, fdef: cst.FunctionDef, base: str) -> str:
    used = {n.value for n in walk(fdef) if isinstance(n, cst.Name)}
    name, i = base, 2
    while name in used:
        name, i = f"{base}_{i}", i + 1
    return name


def with_keyword_only(params: cst.Parameters, name: str) -> cst.Parameters:
    """params plus a keyword-only ``name=False`` (after ``*`` or ``*args``)."""
    new = cst.Param(name=cst.Name(name), default=cst.Name("False"),
                    equal=cst.AssignEqual(whitespace_before=cst.SimpleWhitespace(""),
                                          whitespace_after=cst.SimpleWhitespace("")))
    star = params.star_arg
    if not isinstance(star, (cst.Param, cst.ParamStar)):
        star = cst.ParamStar()
    return params.with_changes(star_arg=star, kwonly_params=[*params.kwonly_params, new])


@fact
def site_use(a, site: cst.Call, depth: int = 0) -> Optional[str]:
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
            free = all(collectives.collective_free(a, c) for c in walk(anc.body) if isinstance(c, cst.Call))
            return "look" if free else "train"
        if isinstance(anc, cst.CompFor) and child is anc.iter:
            # [lengths for _, lengths, _ in ds.take(1000)]: what the comprehension computes decides
            comp = a.parent(anc)
            reading = {id(c) for c in walk(anc.iter)}
            free = all(collectives.collective_free(a, c) for c in walk(comp) if isinstance(c, cst.Call)
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
            passed = dataset_flow.passed_datasets(a, call) if depth < 4 else None
            if passed and any(p is anc.value for p in passed):
                # crop(train_set): a helper of this module transforming the
                # dataset it is handed; what its result is used for decides
                use = site_use(a, call, depth + 1)
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


@fact
def feeds_fit_only(a, value: cst.BaseExpression) -> bool:
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
