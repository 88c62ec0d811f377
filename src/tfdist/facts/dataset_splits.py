"""Datasets that come in splits: ``tfds.load`` shapes, tuples and dicts of splits, and which
element of an unpacked source a name is bound to.
"""
from __future__ import annotations

from typing import List, Optional, Tuple
import libcst as cst
from ..engine.memo import fact
from .. import apis
from .syntax import find_arg, method_name


def literal_false(node) -> bool:
    return isinstance(node, cst.Name) and node.value in ("False", "None")


def literal_true(node) -> bool:
    return node is not None and not literal_false(node) and not (
        isinstance(node, cst.Integer) and node.value == "0")


@fact
def tfds_shape(a, call: cst.Call) -> Tuple[str, bool]:
    """('single' | 'list' | 'dict', with_info) of what tfds.load (or a
    builder's as_dataset, whose split may be positional) returns."""
    split = find_arg(call, "split", apis.TFDS_SPLIT_POSITION.get(a.is_name(call, apis.TFDS_LOAD)))
    info = find_arg(call, "with_info")
    with_info = info is not None and literal_true(info.value)
    if split is None or (isinstance(split.value, cst.Name) and split.value.value == "None"):
        return "dict", with_info
    return ("list" if _list_of_split_names(a, split.value) else "single"), with_info


def _list_of_split_names(a, value, depth: int = 0) -> bool:
    """A split argument naming several splits: a list or tuple literal, a
    comprehension, ``list(...)`` of split names (``list(splits)`` of a
    subsplit), directly or through a name bound once."""
    if isinstance(value, (cst.List, cst.Tuple, cst.ListComp)):
        return True
    if isinstance(value, cst.Call) and a.is_name(value, {"builtins.list", "builtins.tuple"}):
        return True
    if isinstance(value, cst.Call) and method_name(value) in apis.TFDS_SPLIT_LIST_METHODS \
            and any(n.startswith("tensorflow_datasets.") for n in a.names(value)):
        return True
    if isinstance(value, cst.Name) and depth < 4:
        bound = a.assigned_values(value)
        return len(bound) == 1 and bound[0][1] is not None and _list_of_split_names(a, bound[0][1], depth + 1)
    return False


@fact
def unpacked(a, name_node: cst.Name):
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


@fact
def tuple_source_element(a, value, path: List[int]):
    """What the element at ``path`` of a tuple-returning source is:
    'dataset', 'dict' (of datasets, by split) or None (info, unknown)."""
    if isinstance(value, cst.Name):  # (train, val, test) = splits, splits = tfds.load(split=[...])
        src = list_of_splits(a, value)
        return ("dataset", src) if src is not None and len(path) == 1 else (None, None)
    if not isinstance(value, cst.Call):
        return None, None
    if a.is_name(value, apis.TFDS_LOAD):
        shape, with_info = tfds_shape(a, value)
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
    if a.is_name(value, apis.KERAS_DATASET_SPLITTERS) and len(path) == 1 and path[0] in (0, 1):
        return "dataset", value  # split_dataset(...): (left, right)
    return None, None


def integer_index(sub: cst.Subscript) -> Optional[int]:
    """n of ``value[n]`` (a literal integer, not negative), else None."""
    if len(sub.slice) != 1 or not isinstance(sub.slice[0].slice, cst.Index):
        return None
    index = sub.slice[0].slice.value
    return int(index.value) if isinstance(index, cst.Integer) else None


@fact
def list_of_splits(a, expr, depth: int = 0) -> Optional[cst.Call]:
    """The tfds.load call when expr is the list of datasets it returns for
    ``split=[...]`` (directly, through a name bound once, or unpacked from
    ``splits, info = tfds.load(..., with_info=True)``)."""
    if depth > 4:
        return None
    if isinstance(expr, cst.Call):
        return expr if a.is_name(expr, apis.TFDS_LOAD) and tfds_shape(a, expr) == ("list", False) else None
    if not isinstance(expr, cst.Name):
        return None
    bound = a.assigned_values(expr)
    if len(bound) != 1:
        return None
    origin, value = bound[0]
    if value is not None:
        return list_of_splits(a, value, depth + 1)
    unpack = unpacked(a, origin) if isinstance(origin, cst.Name) else None
    if unpack is not None:
        kind, src = tuple_source_element(a, unpack[0].value, unpack[1])
        if kind == "list":
            return src
    return None


@fact
def unpacked_source(a, origin) -> Optional[cst.Call]:
    """The source call when the name bound at origin is unpacked as one
    dataset from a source returning several (``train, val =
    image_dataset_from_directory(..., subset="both")``, ``(train, test),
    info = tfds.load(split=[...], with_info=True)``)."""
    unpack = unpacked(a, origin) if isinstance(origin, cst.Name) else None
    if unpack is None:
        return None
    kind, src = tuple_source_element(a, unpack[0].value, unpack[1])
    return src if kind == "dataset" else None


@fact
def split_source(a, expr) -> Optional[cst.Call]:
    """The source call when expr is one dataset taken by position from the
    list of splits a source returns (``splits[1]`` of ``tfds.load(split=[...])``)."""
    if isinstance(expr, cst.Subscript) and integer_index(expr) is not None:
        return list_of_splits(a, expr.value)
    if isinstance(expr, cst.Subscript):
        return dict_of_splits_source(a, expr.value)
    return None


@fact
def dict_of_splits_source(a, expr) -> Optional[cst.Call]:
    """The tfds.load call when expr is the dict of splits it returns (split=None):
    the call itself (``tfds.load(...)["train"]``) or a name bound to it."""
    if isinstance(expr, cst.Call):
        return expr if a.is_name(expr, apis.TFDS_LOAD) and tfds_shape(a, expr) == ("dict", False) else None
    if not isinstance(expr, cst.Name):
        return None
    for origin, value in a.assigned_values(expr):
        if isinstance(value, cst.Call) and dict_of_splits_source(a, value) is value:
            return value
        if value is None and isinstance(origin, cst.Name):
            unpack = unpacked(a, origin)
            if unpack is not None:
                kind, src = tuple_source_element(a, unpack[0].value, unpack[1])
                if kind == "dict":
                    return src
    return None
