"""Batch calls: where a dataset or a reader is batched, and which step counts depend on the
global batch.
"""
from __future__ import annotations

from typing import List, Optional
import libcst as cst
from .. import apis
from ..engine.memo import fact
from ..engine import analysis as A
from ..engine import dataflow
from ..engine.analysis import returned_values
from ..engine.scopes import walk
from .syntax import find_arg, has_star_args
from . import dataset_flow
from . import dataset_splits
from . import external_functions


# ------------------------------------------------------------ batch per replica
BATCH_METHODS = ("batch", "padded_batch")


#: batch_calls(..., methods=(COMBINERS,)): the dataset combiners on the flow.
COMBINERS = "sample_from_datasets"


@fact
def reader_batches(a: A.Analysis, call: cst.Call) -> bool:
    """A reader that batches what it yields: one of apis.BATCHING_SOURCES
    given a batch size other than None, or batching by its default
    (``tfds.load`` without ``batch_size`` yields single examples)."""
    reader = a.is_name(call, apis.BATCHING_SOURCES)
    if reader is None:
        return False
    keyword, position, default = apis.BATCHING_SOURCES[reader]
    arg = find_arg(call, keyword, position)
    if arg is None:
        return default is not None
    return not (isinstance(arg.value, cst.Name) and arg.value.value == "None")


def _zipped(call: cst.Call) -> List[cst.BaseExpression]:
    """The datasets Dataset.zip(...) is handed in a tuple/list/dict literal
    or as its positional arguments; [] when not written out."""
    args = [arg for arg in call.args if arg.keyword is None or arg.keyword.value == "datasets"]
    if any(arg.star for arg in args) or not args:
        return []
    if len(args) == 1 and isinstance(args[0].value, (cst.Tuple, cst.List)):
        elements = args[0].value.elements
        return [] if any(isinstance(e, cst.StarredElement) for e in elements) else [e.value for e in elements]
    if len(args) == 1 and isinstance(args[0].value, cst.Dict):
        elements = args[0].value.elements
        return [] if any(isinstance(e, cst.StarredDictElement) for e in elements) else [e.value for e in elements]
    return [arg.value for arg in args]


def _batching_transformation(a: A.Analysis, call: cst.Call) -> Optional[cst.Call]:
    """The batching transformation ``dataset.apply(...)`` is handed
    (apis.BATCHING_TRANSFORMATIONS: ``map_and_batch(parse, n)``), or None."""
    if not (isinstance(call.func, cst.Attribute) and call.func.attr.value == "apply" and call.args):
        return None
    inner = call.args[0].value
    return inner if isinstance(inner, cst.Call) and a.is_name(inner, apis.BATCHING_TRANSFORMATIONS) else None


@fact
def batch_calls(a: A.Analysis, expr, seen=None, methods=BATCH_METHODS) -> Optional[List[cst.Call]]:
    """The ``.batch(n)`` calls (or other ``methods``) along a dataset's flow
    from its sources, or None when the flow cannot be followed to them."""
    seen = seen if seen is not None else set()
    if id(expr) in seen:
        return []
    seen.add(id(expr))
    if isinstance(expr, cst.Call):
        return _call_batch_calls(a, expr, seen, methods)
    if isinstance(expr, cst.Subscript):  # splits[1] of tfds.load(split=[...])
        src = dataset_splits.split_source(a, expr)
        return batch_calls(a, src, seen, methods) if src is not None else None
    if isinstance(expr, cst.Attribute):  # a user object's attribute or property (window.train)
        values = dataset_flow.property_values(a, expr)
        if not values:
            return None
        out = []
        for v in values:
            inner = batch_calls(a, v, seen, methods)
            if inner is None:
                return None
            out += [c for c in inner if c not in out]
        return out
    if isinstance(expr, cst.Name):
        return _name_batch_calls(a, expr, seen, methods)
    return None


def _call_batch_calls(a: A.Analysis, expr: cst.Call, seen, methods) -> Optional[List[cst.Call]]:
    """batch_calls of a call: a zip, a reader, a combiner, a dataset method or a function of the script's."""
    if a.is_name(expr, {apis.DATASET_ZIP}) and "batch" in methods and _zipped(expr):
        # the batches of zip((a.batch(n), b.batch(n))) are a's and b's
        out: List[cst.Call] = []
        for d in _zipped(expr):
            inner = batch_calls(a, d, seen, methods)
            if inner is None:
                return None
            out += inner
        return out
    if a.is_name(expr, apis.DATASET_SOURCES):
        # a reader that batches its elements itself is a batch call
        return [expr] if "batch" in methods and reader_batches(a, expr) else []
    combined = a.combined_datasets(expr)
    if combined is not None:  # sample_from_datasets([a, b]): the batches of a and b
        out: List[cst.Call] = [expr] if COMBINERS in methods else []
        for d in combined:
            inner = batch_calls(a, d, seen, methods)
            if inner is None:
                return None
            out += inner
        return out
    f = expr.func
    if isinstance(f, cst.Attribute) and f.attr.value in apis.DATASET_METHODS:
        inner = batch_calls(a, f.value, seen, methods)
        if inner is None:
            return None
        transformation = _batching_transformation(a, expr) if "batch" in methods else None
        if transformation is not None:  # .apply(tf.data.experimental.map_and_batch(parse, n))
            return [transformation] + inner
        return ([expr] if f.attr.value in methods else []) + inner
    if isinstance(f, (cst.Name, cst.Attribute)):
        fdefs = dataflow.callees(a, expr)  # a function of this module, or a method of a user class
        if not fdefs:
            return None
        out: List[cst.Call] = []
        for fdef in fdefs:
            for r in A.returned_values(fdef):
                inner = batch_calls(a, r, seen, methods)
                if inner is None:
                    return None
                out += inner
        return out
    return None


def _name_batch_calls(a: A.Analysis, expr: cst.Name, seen, methods) -> Optional[List[cst.Call]]:
    """batch_calls of a name: those of every value it is bound to (unpacked, returned or passed in)."""
    out = []
    values = a.assigned_values(expr)
    if not values:
        return None
    for origin, v in values:
        if v is None and not isinstance(origin, cst.Param):
            src = dataset_splits.unpacked_source(a, origin)  # train, val = reader(..., subset="both")
            if src is not None:
                out += [c for c in batch_calls(a, src, seen, methods) or [] if c not in out]
                continue
            elements = a.tuple_element_values(origin)  # train, val = make_datasets(): its returned tuple
            if elements:
                for element in elements:
                    inner = batch_calls(a, element, seen, methods)
                    if inner is None:
                        return None
                    out += [c for c in inner if c not in out]
                continue
        if v is None and isinstance(origin, cst.Param):  # passed in (or its default): where every caller built it
            passed = a.parameter_values(origin)
            if not passed:
                return None
            for arg in passed:
                inner = batch_calls(a, arg, seen, methods)
                if inner is None:
                    return None
                out += inner
            continue
        if v is None:
            return None
        inner = batch_calls(a, v, seen, methods)
        if inner is None:
            return None
        out += inner
    return out


def batched_state(ctx) -> set:
    return ctx.state("replicas.batched")


def global_batch_parameters(ctx) -> dict:
    """helper call -> names of the helper's parameters whose batch this
    conversion multiplied at that call (the global batch from then on)."""
    return ctx.state("replicas.global_batch_params", dict)


def batch_in_settings(ctx, other: A.Analysis, fdef: cst.FunctionDef, call: cst.Call, batch):
    """(parameter, value) when the helper batches by one key of a dict it
    is handed (``.batch(config["batch_size"])``) and this call hands it a
    dict written out in this file (``config = {"batch_size": 32, ...}``)
    whose key is read nowhere else here: that value is the helper's batch
    and nothing else's, so it can be made the global batch where it is
    written. None otherwise."""
    a = ctx.a
    if not (isinstance(batch, cst.Subscript) and len(batch.slice) == 1 and isinstance(batch.slice[0].slice, cst.Index)
            and isinstance(batch.slice[0].slice.value, cst.SimpleString)) or has_star_args(call):
        return None
    key = batch.slice[0].slice.value.evaluated_value
    param = dataset_flow.helper_param(other, fdef, batch.value)
    if param is None:
        return None
    given = find_arg(call, param.name.value, list(fdef.params.params).index(param))
    if given is None or not isinstance(given.value, cst.Name):
        return None
    bound = a.assigned_values(given.value)
    if len(bound) != 1 or not isinstance(bound[0][1], cst.Dict):
        return None
    origin, display = bound[0]
    entries = [e for e in display.elements if isinstance(e, cst.DictElement) and isinstance(e.key, cst.SimpleString)
               and e.key.evaluated_value == key]
    if len(entries) != 1 or any(isinstance(e, cst.StarredDictElement) for e in display.elements):
        return None
    targets = {id(n) for n in walk(origin)} if isinstance(origin, cst.Assign) else {id(origin)}
    for n in walk(a.module):
        if not isinstance(n, cst.Name) or n.value != given.value.value or id(n) in targets or n is given.value \
                or not any(o is origin for o, _ in a.assigned_values(n)):
            continue
        parent = a.parent(n)
        if isinstance(parent, cst.Subscript) and parent.value is n and len(parent.slice) == 1 \
                and isinstance(parent.slice[0].slice, cst.Index) \
                and isinstance(parent.slice[0].slice.value, cst.SimpleString) \
                and parent.slice[0].slice.value.evaluated_value != key \
                and not isinstance(a.parent(parent), cst.AssignTarget):
            continue  # another key read
        return None  # handed on, changed, or its batch read here too
    return param, entries[0].value


def counted_on_global_batch(ctx, value) -> Optional[str]:
    """The helper's name when ``value`` is a count a helper of another
    module returned with the dataset (``dataset, steps = get_dataset(...)``)
    and computed from the batch this conversion made the global batch at
    that call: a count of global batches, which must not be divided again."""
    a = ctx.a
    if not isinstance(value, cst.Name):
        return None
    bound = a.assigned_values(value)
    if len(bound) != 1 or bound[0][1] is not None or not isinstance(bound[0][0], cst.Name):
        return None
    unpack = dataset_splits.unpacked(a, bound[0][0])
    if unpack is None or not isinstance(unpack[0].value, cst.Call) or unpack[0].value not in global_batch_parameters(ctx):
        return None
    call = unpack[0].value
    found = external_functions.external_function_of(a, call)
    if found is None:
        return None
    other, fdef = found
    params = global_batch_parameters(ctx)[call]
    counts = []
    for ret in returned_values(fdef):
        for i in unpack[1]:
            if not isinstance(ret, (cst.Tuple, cst.List)) or i >= len(ret.elements):
                return None
            ret = ret.elements[i].value
        counts.append(ret)
    if counts and all(dataflow.depends_on(other, c, params) for c in counts):
        return a.code(call.func)
    return None
