"""Where a dataset comes from and where it flows: its sources, the helpers that build it, the paths
it takes to fit or to a loop.

Where a dataset comes from: the read-only half of dividing the work.

Follows the value given to training back to its sources -- through method
chains, the binding of a name that reaches each use, unpacked and indexed
``tfds.load`` splits, dicts of splits, local helpers and helpers of sibling
modules -- and answers what the sharding rules (data_division,
endless_inputs, replicas) must know before they edit: which sources, whether
the size is still known, which helpers have other callers. Nothing here
edits the script.
"""
from __future__ import annotations

from dataclasses import dataclass
from typing import List, Optional
import libcst as cst
from .. import apis
from ..engine.memo import fact
from ..engine import dataflow
from ..engine.analysis import returned_values
from ..engine.scopes import walk
from .dataset_splits import split_source, unpacked, unpacked_source
from .external_functions import external_function_of
from .syntax import find_arg, has_star_args


@fact
def directory_reader_name(a, src: cst.Call) -> Optional[str]:
    """The one name a directory reader (``image_dataset_from_directory``...)
    is bound to (``train_ds = reader(...)``), else None."""
    if not a.is_name(src, apis.KERAS_DIRECTORY_DATASETS):
        return None
    assign = a.parent(src)
    if not isinstance(assign, cst.Assign) or len(assign.targets) != 1 or not isinstance(assign.targets[0].target, cst.Name):
        return None
    return assign.targets[0].target.value


@fact
def flow_path(a, expr, target, depth: int) -> Optional[List[cst.Call]]:
    """The dataset method calls from expr down to the source call target,
    following each name to the one binding that reaches it."""
    if expr is target:
        return []
    if depth > 20:
        return None
    if isinstance(expr, cst.Call) and isinstance(expr.func, cst.Attribute) and expr.func.attr.value in apis.DATASET_METHODS:
        rest = flow_path(a, expr.func.value, target, depth + 1)
        return None if rest is None else [expr] + rest
    if isinstance(expr, cst.Name):
        bound = a.assigned_values(expr)
        value = bound[0][1] if len(bound) == 1 else reaching_value(a, expr)
        return None if value is None else flow_path(a, value, target, depth + 1)
    return None


@fact
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
        combined = a.combined_datasets(expr)
        if combined is not None:
            return [s for d in combined for s in dataset_sources(a, d, seen, through_params)]
        f = expr.func
        if isinstance(f, cst.Attribute) and f.attr.value in apis.DATASET_METHODS:
            return dataset_sources(a, f.value, seen, through_params)
        return [s for fdef in dataflow.callees(a, expr) for r in returned_values(fdef)
                for s in dataset_sources(a, r, seen, through_params)]
    if isinstance(expr, cst.Subscript):
        src = split_source(a, expr)
        return [src] if src is not None else []
    if isinstance(expr, cst.Attribute):  # an attribute or property of a user object
        return [s for v in property_values(a, expr) for s in dataset_sources(a, v, seen, through_params)]
    if isinstance(expr, cst.Name):
        out: List[cst.Call] = []
        for origin, value in a.assigned_values(expr):
            if value is not None:
                out += dataset_sources(a, value, seen, through_params)
            elif isinstance(origin, cst.Param):
                for arg in a.parameter_values(origin) if through_params else ():
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


@fact
def size_known(a, expr, seen=None) -> bool:
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
            return f.attr.value in apis.SIZE_KEEPING_DATASET_METHODS and size_known(a, f.value, seen)
        rets = [r for fdef in dataflow.callees(a, expr) for r in returned_values(fdef)]
        return bool(rets) and all(size_known(a, r, seen) for r in rets)
    if isinstance(expr, cst.Name):
        # a value bound by unpacking: the source it is unpacked from
        # (train, info = tfds.load(..., with_info=True))
        values = [v if v is not None else unpacked_source(a, o) for o, v in a.assigned_values(expr)]
        return bool(values) and all(v is not None and size_known(a, v, seen) for v in values)
    if isinstance(expr, cst.Attribute):
        values = property_values(a, expr)
        return bool(values) and all(size_known(a, v, seen) for v in values)
    return False


@fact
def chain_methods(a, expr, seen=None) -> List[str]:
    """Dataset methods applied along the way from the sources to expr."""
    seen = seen if seen is not None else set()
    if id(expr) in seen:
        return []
    seen.add(id(expr))
    out: List[str] = []
    if isinstance(expr, cst.Call):
        f = expr.func
        if isinstance(f, cst.Attribute) and f.attr.value in apis.DATASET_METHODS:
            return [f.attr.value] + chain_methods(a, f.value, seen)
        for fdef in dataflow.callees(a, expr):
            for r in returned_values(fdef):
                out += chain_methods(a, r, seen)
    elif isinstance(expr, cst.Name):
        for _, v in a.assigned_values(expr):
            if v is not None:
                out += chain_methods(a, v, seen)
    elif isinstance(expr, cst.Attribute):
        for v in property_values(a, expr):
            out += chain_methods(a, v, seen)
    return out


@fact
def helper_calls(a, expr, seen=None) -> List[cst.Call]:
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
            return helper_calls(a, f.value, seen)
        if any(dataset_sources(a, r) for fdef in dataflow.callees(a, expr) for r in returned_values(fdef)):
            return [expr]
        return []
    if isinstance(expr, cst.Name):
        return [c for _, v in a.assigned_values(expr) if v is not None for c in helper_calls(a, v, seen)]
    if isinstance(expr, cst.Attribute):
        return [c for v in property_values(a, expr) for c in helper_calls(a, v, seen)]
    return []


@fact
def property_values(a, expr: cst.Attribute) -> List[cst.BaseExpression]:
    """What an attribute of an instance of a user class holds: the values
    assigned to ``self.<attr>``, or what its property returns (``window.train``)."""
    return [v for cd in a.instance_classes(expr.value) for v in a.attribute_values(cd, expr.attr.value)]


@fact
def appended(a: A.Analysis, target: cst.Name) -> List[cst.BaseExpression]:
    """The values appended to the list a name is bound to: ``xs.append(v)``
    on any reference the binding reaches."""
    out = []
    for ref in a.scopes.references(target):
        attr = a.parent(ref)
        call = a.parent(attr) if isinstance(attr, cst.Attribute) and attr.value is ref else None
        if isinstance(call, cst.Call) and call.func is attr and attr.attr.value in ("append", "insert") \
                and call.args:
            out.append(call.args[-1].value)
    return out


@fact
def row_origins(a, src: cst.Call) -> List[cst.Call]:
    """Dataset sources whose elements an in-memory source's rows were read
    from, in their order: ``rows.append(load(x))`` in a loop over
    ``iter(tf.data.Dataset.list_files(...))``, then
    ``from_tensor_slices(rows)``. Their order is the rows' order, so a
    source shuffling with a random seed of each process orders the rows
    differently on every rank."""
    out: List[cst.Call] = []
    names = [n for arg in src.args for n in walk(arg.value) if isinstance(n, cst.Name)]
    seen = set()
    while names:
        name = names.pop()
        if id(name) in seen or len(seen) > 64:
            continue
        seen.add(id(name))
        for origin, value in a.assigned_values(name):
            if value is not None and not (isinstance(value, cst.List) and not value.elements):
                # made from other values (train_data = tf.stack(train_data)): their rows, in their order
                names += [n for n in walk(value) if isinstance(n, cst.Name)]
                continue
            if not (isinstance(value, cst.List) and isinstance(origin, cst.Assign)
                    and isinstance(origin.targets[0].target, cst.Name)):
                continue
            for added in appended(a, origin.targets[0].target):
                for loop in (n for n in a.ancestors(added) if isinstance(n, cst.For)):
                    iterable = loop.iter
                    for _ in range(4):  # through iter(...) / enumerate(...), and a name bound once to one
                        if isinstance(iterable, cst.Name):
                            bound = [v for _, v in a.assigned_values(iterable)]
                            if len(bound) == 1 and isinstance(bound[0], cst.Call) and a.is_name(
                                    bound[0], {"builtins.iter", "builtins.enumerate"}):
                                iterable = bound[0]
                        if isinstance(iterable, cst.Call) and iterable.args and a.is_name(
                                iterable, {"builtins.iter", "builtins.enumerate"}):
                            iterable = iterable.args[0].value
                    out += [s for s in dataset_sources(a, iterable) if s not in out]
    return out


@fact
def call_sites(a, fdef: cst.FunctionDef) -> List[cst.Call]:
    """The calls of this module running fdef: by its name, or as a method."""
    name = fdef.name.value
    return [c for c in a.calls if ((isinstance(c.func, cst.Name) and c.func.value == name)
                                   or (isinstance(c.func, cst.Attribute) and c.func.attr.value == name))
            and fdef in dataflow.callees(a, c)]


@fact
def shared_helpers(a, expr) -> List[cst.Call]:
    """Helper calls whose function has other callers: sharding inside it
    would change what those callers get -- and divide a second time a flow
    already sharded at its own call site (training and validation data
    built by one helper) -- so each call site is sharded instead."""
    out = []
    for call in helper_calls(a, expr):
        fdefs = dataflow.callees(a, call)
        if any(site is not call for fdef in fdefs for site in call_sites(a, fdef)):
            out.append(call)
    return out


@fact
def passed_datasets(a, call: cst.Call) -> Optional[List[cst.BaseExpression]]:
    """The arguments of this call of a helper that builds no dataset of its
    own -- every source its returned dataset is made of is handed to it by
    its callers (``prepare(tfds.load("mnist", split="train"))``) -- which
    carry datasets; None when the helper has sources of its own."""
    fdefs = a.local_functions(call.func) if isinstance(call.func, cst.Name) else []
    if len(fdefs) != 1:
        return None
    fdef = fdefs[0]
    params = list(fdef.params.params)
    rets = returned_values(fdef)
    if not rets or any(dataset_sources(a, r, through_params=False) for r in rets) or not any(
            dataset_sources(a, r) for r in rets):
        return None
    here = [arg for param in params for c, arg in a.argument_values(param) if c is call]
    out = [arg for arg in here if a.dataset_sources(arg) or dataset_sources(a, arg)]
    # a name bound more than once (``ds = helper(ds)``) is not followed here
    if any(isinstance(arg, cst.Name) and len(a.assigned_values(arg)) != 1 for arg in out):
        return None
    return out or None


@fact
def external_returned(a, call: cst.Call, path: Optional[List[int]] = None):
    """(analysis of its module, FunctionDef, returned datasets) when call
    runs a helper of another module of the project every return of which
    is a dataset -- or, with ``path``, holds one at that position of the
    tuple it returns (``train, test, info = utils.create_dataset(...)``);
    None otherwise."""
    found = external_function_of(a, call)
    if found is None:
        return None
    other, fdef = found
    out = []
    for ret in returned_values(fdef):
        for i in path or ():
            if not isinstance(ret, (cst.Tuple, cst.List)) or i >= len(ret.elements) \
                    or not isinstance(ret.elements[i], cst.Element):
                return None
            ret = ret.elements[i].value
        if not dataset_sources(other, ret):
            return None
        out.append(ret)
    return (other, fdef, out) if out else None


@dataclass
class HelperSite:
    """Where a helper of another module hands over a dataset: its call;
    with ``path``, the dataset sits at that place of the tuple the helper
    returns and is bound to ``name`` by ``unpack`` (``train, test, info =
    utils.create_dataset(...)``)."""
    call: cst.Call
    path: Optional[List[int]] = None
    unpack: Optional[cst.Assign] = None
    name: Optional[str] = None


@fact
def external_sites(a, expr, depth: int = 0) -> Optional[List[HelperSite]]:
    """Where helpers of other modules of the project build the dataset expr
    holds, followed through names, dataset methods, the values a parameter
    is called with, and tuple unpacking (a step loop in a method iterating
    what its caller got from ``utils.create_dataset(...)``); None when some
    way there reaches anything else."""
    if depth > 8:
        return None
    if isinstance(expr, cst.Call) and isinstance(expr.func, cst.Attribute) \
            and expr.func.attr.value in apis.DATASET_METHODS:
        return external_sites(a, expr.func.value, depth + 1)
    if isinstance(expr, cst.Call):
        return [HelperSite(expr)] if external_returned(a, expr) is not None else None
    if not isinstance(expr, cst.Name):
        return None
    bound = a.assigned_values(expr)
    out: List[HelperSite] = []
    for origin, value in bound:
        if value is not None:
            found = external_sites(a, value, depth + 1)
        elif isinstance(origin, cst.Param):
            passed = [external_sites(a, v, depth + 1) for v in a.parameter_values(origin)]
            found = None if not passed or None in passed else [site for p in passed for site in p]
        else:
            unpack = unpacked(a, origin) if isinstance(origin, cst.Name) else None
            found = [HelperSite(unpack[0].value, unpack[1], unpack[0], origin.value)] \
                if unpack is not None and isinstance(unpack[0].value, cst.Call) \
                and external_returned(a, unpack[0].value, unpack[1]) is not None else None
        if found is None:
            return None
        out += found
    return out or None


@fact
def external_dataset(a, expr) -> bool:
    """expr holds a dataset helpers of other modules of the project made (external_sites)."""
    return external_sites(a, expr) is not None


@fact
def helper_param(other, fdef: cst.FunctionDef, value) -> Optional[cst.Param]:
    """The parameter of ``fdef`` (a helper in ``other``'s module) that sets
    ``value``, an argument inside it: a name bound to that parameter, or to
    a parameter of a function of the module that ``fdef`` calls once and
    hands it on to (``make(batch_size)`` -> ``build(batch_size=batch_size)``
    -> ``.batch(batch_size)``); None otherwise."""
    for _ in range(4):
        if not isinstance(value, cst.Name):
            return None
        bound = other.assigned_values(value)
        if len(bound) != 1 or not isinstance(bound[0][0], cst.Param):
            return None
        param = bound[0][0]
        if param in fdef.params.params:
            return param
        inner = other.enclosing_function(param)
        if inner is None or param not in inner.params.params:
            return None
        calls = [c for c in walk(fdef.body) if isinstance(c, cst.Call) and isinstance(c.func, cst.Name)
                 and inner in other.local_functions(c.func)]
        if len(calls) != 1 or has_star_args(calls[0]):
            return None
        arg = find_arg(calls[0], param.name.value, list(inner.params.params).index(param))
        if arg is None:
            return None
        value = arg.value
    return None


@fact
def same_on_every_rank(a, value) -> bool:
    """``value`` is the same number in every process: an integer literal,
    or a name every binding reaching it binds to one."""
    if isinstance(value, cst.Integer):
        return True
    if isinstance(value, cst.Name):
        bound = a.assigned_values(value)
        return bool(bound) and all(isinstance(v, cst.Integer) for _, v in bound)
    return False


@fact
def path_to(a, expr, target, seen=None) -> Optional[List[cst.Call]]:
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
            rest = path_to(a, f.value, target, seen)
            return None if rest is None else [expr] + rest
        if isinstance(f, cst.Name):
            for fdef in a.local_functions(f):
                for r in returned_values(fdef):
                    rest = path_to(a, r, target, seen)
                    if rest is not None:
                        return rest
        return None
    if isinstance(expr, cst.Subscript):  # splits["train"] of tfds.load(...)
        return [] if split_source(a, expr) is target else None
    if isinstance(expr, cst.Name):
        for origin, v in a.assigned_values(expr):
            candidates = [v] if v is not None else [] if isinstance(origin, cst.Param) else \
                a.tuple_element_values(origin)
            if v is None and not isinstance(origin, cst.Param) and unpacked_source(a, origin) is target:
                return []
            for value in candidates:
                rest = path_to(a, value, target, seen)
                if rest is not None:
                    return rest
    return None


@fact
def batch_takes(a, expr) -> List[cst.Call]:
    """The ``take(n)`` calls on the way from expr's sources to expr that come
    after it is batched: each n counts batches, that is steps."""
    out: List[cst.Call] = []
    for src in dataset_sources(a, expr):
        batched = False
        for call in reversed(path_to(a, expr, src) or []):  # from the source towards expr
            name = call.func.attr.value
            if name in apis.BATCHING_DATASET_METHODS | apis.UNBATCHING_DATASET_METHODS:
                batched = name in apis.BATCHING_DATASET_METHODS
            if batched and name == "take" and call not in out:
                out.append(call)
    return out


@fact
def reaching_value(a, name: cst.Name):
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
            if fdef in a.local_functions(use)]
    if not uses or any(not (isinstance(a.parent(u), cst.Call) and a.parent(u).func is u) or a.line(u) <= last for u in uses):
        return None
    return bound[-1][1]
