"""What Keras fit is fed when it is not tf.data: Sequences, generators, ImageDataGenerator flows,
named inputs.

Dividing the work for Keras inputs that are not tf.data: an
ImageDataGenerator flow (arrays sliced by rank, or one shuffled stream per
rank with the steps divided), a keras.utils.Sequence (read through a
rank-strided wrapper), and the step counts fit() is given for them.

Part of the data-division rule: it shares that rule's id and its
per-conversion state (what is already divided), so the two never divide a
source twice.
"""
from __future__ import annotations

from typing import Optional, Tuple
import libcst as cst
from .. import apis
from ..engine.memo import fact
from ..engine import analysis as A
from ..engine.scopes import walk
from ..engine.analysis import SEQUENCE, returned_values
from .dataset_flow import call_sites
from .dataset_splits import unpacked
from .external_functions import external_function_of
from .syntax import calls_in, method_name


def _constructed(a, expr, table, depth: int = 0) -> Optional[cst.Call]:
    """The call building expr when it is in table: through names and
    parameters (every call's argument, and the default), a binding to None
    left out (a method called on the object cannot run on None:
    ``datagen = ImageDataGenerator(...) if augment else None``, then
    ``datagen.flow(...)`` where it is not None); every other binding must be
    such a call, the first of them returned."""
    if depth > 8:
        return None
    if isinstance(expr, cst.Call):
        return expr if a.is_name(expr, table) else None
    if not isinstance(expr, cst.Name):
        return None
    values = []
    for origin, value in a.assigned_values(expr):
        if isinstance(origin, cst.Param):
            values += a.parameter_values(origin)
        elif value is None:
            return None
        else:
            values.append(value)
    values = [v for v in values if not (isinstance(v, cst.Name) and v.value == "None")]
    if not values:
        return None
    found = [_constructed(a, v, table, depth + 1) for v in values]
    return found[0] if all(f is not None for f in found) else None


@fact
def image_flow(a, expr) -> Tuple[Optional[str], Optional[cst.Call]]:
    """('array' | 'files', flow call) when expr is an ImageDataGenerator flow."""
    call = expr
    for _ in range(4):  # a name, bound to a flow or to one returned by a function of this file
        if not isinstance(call, cst.Name):
            break
        bound = a.assigned_values(call)
        if len(bound) != 1:
            return None, None
        origin, value = bound[0]
        if value is None:  # train, val = make_flows(...): the matching element of its returns
            elements = a.tuple_element_values(origin)
            if len(elements) != 1:
                return None, None
            value = elements[0]
            maker = a.enclosing_function(value)
            if maker is not None and maker is not a.enclosing_function(origin) \
                    and len(call_sites(a, maker)) != 1:
                # Dividing the flow inside would divide what its other callers get too.
                return None, None
        call = value
    if not isinstance(call, cst.Call) or not isinstance(call.func, cst.Attribute):
        return None, None
    if _constructed(a, call.func.value, apis.KERAS_IMAGE_DATA_GENERATORS) is None:
        return None, None
    m = call.func.attr.value
    if m in apis.IMAGE_GENERATOR_ARRAY_FLOWS:
        return "array", call
    if m in apis.IMAGE_GENERATOR_FILE_FLOWS:
        return "files", call
    return None, None


@fact
def draws_elsewhere_than_numpy(a, fdef) -> bool:
    """``fdef`` calls something random other than NumPy's global generator
    (``random.shuffle``, a Generator or RandomState of its own, TensorFlow's
    draws): seeding NumPy alike would not make its order the same on every rank."""
    for c in calls_in(fdef.body):
        names = a.names(c)
        if any(n.startswith(apis.RANDOM_MODULE_PREFIXES) and not n.startswith("numpy.random.")
               or n in apis.NUMPY_OWN_GENERATORS for n in names):
            return True
        if method_name(c) in apis.RANDOM_DRAWS and not any(n.startswith("numpy.random.") for n in names):
            return True  # self.rng.shuffle(...): a generator of its own
    return False


@fact
def sequence_classes(a, expr) -> list:
    """The Sequence classes of this module expr is an instance of."""
    out = []
    for c in a.classdefs:
        fact = a.classes.get(next(iter(a.qualified(c.name)), c.name.value))
        if fact and A.SEQUENCE in fact.kinds and any(t.name == fact.name for t in a.types(expr)):
            out.append(c)
    return out



def counts_sharded_data(ctx, steps, data_names) -> bool:
    """steps counts (len / cardinality) a dataset or flow already sharded
    upstream of one of data_names: it is per rank already."""
    a = ctx.a
    seen = set()
    todo = [steps]
    while todo:
        node = todo.pop()
        if id(node) in seen:
            continue
        seen.add(id(node))
        for n in walk(node):
            if isinstance(n, cst.Call):
                target = None
                if a.is_name(n, apis.COUNT_FUNCTIONS) or (isinstance(n.func, cst.Name) and n.func.value == "len"):
                    target = n.args[0].value if n.args else None
                elif method_name(n) in apis.COUNT_METHODS:
                    target = n.func.value
                if isinstance(target, cst.Name) and target.value in data_names:
                    return True
            elif isinstance(n, cst.Name) and n is not node:
                bound = a.assigned_values(n)
                if len(bound) == 1 and bound[0][1] is not None:
                    todo.append(bound[0][1])
        if isinstance(node, cst.Name):
            bound = a.assigned_values(node)
            if len(bound) == 1 and bound[0][1] is not None:
                todo.append(bound[0][1])
    return False


@fact
def data_names(a, expr) -> set:
    """Names the data given to fit() is reached through (x itself, and the
    names of the dataset chain down to its source)."""
    out = set()
    seen = set()
    todo = [expr]
    while todo:
        e = todo.pop()
        if id(e) in seen:
            continue
        seen.add(id(e))
        if isinstance(e, cst.Name):
            out.add(e.value)
            todo += [v for _, v in a.assigned_values(e) if v is not None]
        elif isinstance(e, cst.Call) and isinstance(e.func, cst.Attribute) and e.func.attr.value in apis.DATASET_METHODS:
            todo.append(e.func.value)
    return out


@fact
def unbound_parameter_note(a, expr) -> str:
    """`` (x is a parameter of train(), which this file never calls)`` when
    expr is a parameter no call of this module binds, so what it holds
    cannot be read here; else ``""``."""
    if not isinstance(expr, cst.Name):
        return ""
    bound = a.assigned_values(expr)
    if len(bound) != 1 or not isinstance(bound[0][0], cst.Param) or a.parameter_values(bound[0][0]):
        return ""
    fdef = a.enclosing_function(bound[0][0])
    return f" ({expr.value} is a parameter of {fdef.name.value}(), which this file never calls)" if fdef is not None else ""


@fact
def external_sequence(a, expr) -> bool:
    """expr is a Keras Sequence (an ImageDataGenerator flow, a Sequence
    subclass) made by a function of another module of the project: bound
    from its call (``flow = make_flow(...)``) or unpacked from the tuple it
    returns (``train, val = generators(...)``), every return of it holding
    one there. Whatever made it, a Sequence is read by index, which the
    engines divide without editing where it is built."""
    if not isinstance(expr, cst.Name):
        return False
    bound = a.assigned_values(expr)
    if len(bound) != 1:
        return False
    origin, value = bound[0]
    path: list = []
    if value is None and isinstance(origin, cst.Name):
        unpack = unpacked(a, origin)
        if unpack is None:
            return False
        value, path = unpack[0].value, unpack[1]
    if not isinstance(value, cst.Call):
        return False
    found = external_function_of(a, value)
    if found is None:
        return False
    other, fdef = found
    returns = list(returned_values(fdef))
    if not returns:
        return False
    for ret in returns:
        for index in path:
            if not isinstance(ret, (cst.Tuple, cst.List)) or index >= len(ret.elements) \
                    or isinstance(ret.elements[index], cst.StarredElement):
                return False
            ret = ret.elements[index].value
        if not (other.is_kind(ret, SEQUENCE) or image_flow(other, ret)[0] is not None):
            return False
    return True
