"""Which arrays are rows of samples: NumPy arrays and what keeps them row-aligned (slices,
reshapes, transforms that keep rows), followed through helpers and unpacking.
"""
from __future__ import annotations

from typing import List, Optional, Set
import libcst as cst
from .. import apis
from ..engine.memo import fact
from ..engine import dataflow
from ..engine.analysis import returned_values
from ..engine.scopes import walk
from .dataset_flow import chain_methods
from .dataset_splits import unpacked
from .external_functions import external_callable
from .syntax import find_arg, has_star_args


def array_leaves(value: cst.BaseExpression, a=None) -> Optional[List[cst.BaseExpression]]:
    """The arrays a fit() argument is made of: the value itself, or -- for a
    model with several inputs or outputs -- every array of a literal tuple,
    list or dict of them (nested), in order; None when one is not an array
    named or indexed (a call, a comprehension, a ``**`` entry...). With the
    analysis ``a``, also the array ``np.array(x)`` converts (x), a new
    array made by a constructor (``np.ones((64, 8))``: the call itself), and
    a list or dict of arrays made by a comprehension or ``list(Y)`` (itself:
    see array_structure)."""
    if isinstance(value, cst.Name) and value.value == "None":
        return []  # validation_data=(x, None): no labels, nothing to slice
    if isinstance(value, (cst.Name, cst.Attribute, cst.Subscript)):
        return [value]
    if isinstance(value, (cst.BinaryOperation, cst.UnaryOperation)):
        # df.rating.values - mu, x / 255.0: what fit() is handed has its
        # samples along the first axis, whatever the arithmetic: the result
        # is sliced as one array
        return [value]
    if isinstance(value, cst.Call) and isinstance(value.func, cst.Attribute) and \
            value.func.attr.value in apis.ROW_KEEPING_CONVERSIONS:
        return array_leaves(value.func.value, a)  # x.astype(np.float32): the rows of x, sliced before converting
    if isinstance(value, cst.Call) and isinstance(value.func, cst.Attribute) and \
            value.func.attr.value in apis.ARRAY_RESULT_METHODS and array_leaves(value.func.value, a) is not None:
        return [value]  # x.reshape((len(x), 1)): an array whose rows fit() pairs; sliced whole, computed once
    if isinstance(value, cst.Call) and a is not None and not has_star_args(value):
        first = value.args[0] if value.args and value.args[0].keyword is None else None
        keeping = a.is_name(value, apis.ROW_KEEPING_ARRAY_FUNCTIONS)
        if first is not None and keeping is not None and keeps_rows(value, keeping) \
                and isinstance(first.value, (cst.Name, cst.Attribute, cst.Subscript, cst.Call)):
            # np.array(x_list), tf.one_hot(labels, 10): the rows of the array handed
            # in, sliced before converting
            inner = array_leaves(first.value, a)
            if inner is not None:
                return inner
        if a.is_name(value, apis.ARRAY_CONSTRUCTORS):
            return [value]
        return [value] if array_structure(a, value) == "list" else None  # list(Y): one array per output
    if isinstance(value, (cst.Tuple, cst.List)) and value.elements:
        items = [e.value for e in value.elements if not isinstance(e, cst.StarredElement)]
        if len(items) != len(value.elements):
            return None
    elif isinstance(value, cst.Dict) and value.elements:
        if any(not isinstance(e, cst.DictElement) for e in value.elements):
            return None
        items = [e.value for e in value.elements]
    elif a is not None and array_structure(a, value) in ("list", "dict"):
        return [value]  # [Y[:, t] for t in ...]: one array per output, each sliced alike
    else:
        return None
    out: List[cst.BaseExpression] = []
    for item in items:
        leaves = array_leaves(item, a)
        if leaves is None:
            return None
        out += leaves
    return out


@fact
def array_structure(a, value, depth: int = 0) -> Optional[str]:
    """How Keras reads a Python container given to fit() as x or y:
    "dict" (a dict display or comprehension) or "list" (a list or tuple --
    a display, a comprehension, ``list(...)``/``tuple(...)`` -- whose items
    are not Python numbers) holds one array per input or output of the
    model, each with the samples along its first axis: ``[x_wide, x_deep]``,
    ``[Y[:, t] for t in range(Ty)]``, ``list(Y.swapaxes(0, 1))``. Keras 2
    and 3 alike take a list of arrays that way (a list of per-sample arrays
    fails their cardinality check), so slicing the list itself would drop
    inputs or outputs, not samples: each array is sliced alike. A name is
    followed to every binding that reaches it (one kind for all, else
    "mixed"). None for anything else: an array, or a list of Python numbers
    (samples, which only tf.keras 2 reads, and only when x is one too)."""
    if depth > 6:
        return None
    if isinstance(value, (cst.Dict, cst.DictComp)):
        return "dict" if not isinstance(value, cst.Dict) or (value.elements and all(
            isinstance(e, cst.DictElement) for e in value.elements)) else None
    if isinstance(value, (cst.List, cst.Tuple)):
        items = [e.value for e in value.elements]
        return "list" if items and not any(_python_scalar(a, i) for i in items) else None
    if isinstance(value, (cst.ListComp, cst.GeneratorExp)):
        return None if _python_scalar(a, value.elt) else "list"
    if isinstance(value, cst.Call) and a.is_name(value, {"builtins.list", "builtins.tuple"}) \
            and len(value.args) == 1 and value.args[0].keyword is None and not value.args[0].star:
        inner = value.args[0].value
        if isinstance(inner, (cst.GeneratorExp, cst.ListComp, cst.List, cst.Tuple)):
            return array_structure(a, inner, depth + 1)
        return "list"  # list(Y): Y's sub-arrays along its first axis, one per input or output
    if isinstance(value, cst.Name):
        bound = a.assigned_values(value)
        if not bound or any(v is None for _, v in bound):
            return None
        kinds = {array_structure(a, v, depth + 1) for _, v in bound}
        return kinds.pop() if len(kinds) == 1 else "mixed"
    return None


def _python_scalar(a, expr) -> bool:
    """expr is a Python number or string (or a list of them): a literal,
    ``int(...)``, a comparison, a name bound only to such."""
    if isinstance(expr, (cst.Integer, cst.Float, cst.SimpleString, cst.Comparison, cst.BooleanOperation,
                         cst.List, cst.Tuple)):
        return True
    if isinstance(expr, cst.UnaryOperation):
        return _python_scalar(a, expr.expression)
    if isinstance(expr, cst.Call):
        return a.is_name(expr, apis.PYTHON_SCALAR_BUILTINS) is not None
    if isinstance(expr, cst.Name) and a is not None:
        bound = a.assigned_values(expr)
        return bool(bound) and all(v is not None and isinstance(v, (cst.Integer, cst.Float, cst.SimpleString))
                                   for _, v in bound)
    return False


def keeps_rows(call: cst.Call, name: str) -> bool:
    """A row-keeping function's call keeps the rows: for one adding an axis,
    that axis is not the first (apis.ROW_KEEPING_WITH_AXIS)."""
    if name not in apis.ROW_KEEPING_WITH_AXIS:
        return True
    arg = find_arg(call, *apis.ROW_KEEPING_WITH_AXIS[name])
    if arg is None:
        return False
    value = arg.value
    if isinstance(value, cst.UnaryOperation) and isinstance(value.operator, cst.Minus) \
            and isinstance(value.expression, cst.Integer):
        return value.expression.value == "1"
    return isinstance(value, cst.Integer) and int(value.value, 0) >= 1


@fact
def numpy_array(a, expr, depth: int = 0, seen: Optional[Set[int]] = None) -> bool:
    """Is expr certainly a NumPy array -- made by a numpy function, a Keras
    data set's load_data(), a function of apis.ARRAY_RETURNING_FUNCTIONS, or
    slicing, arithmetic and row-keeping methods of such -- followed through
    every binding of a name?"""
    if depth > 8:
        return False
    seen = set() if seen is None else seen  # bindings being followed: x = x.astype(...) reads its own
    if isinstance(expr, (cst.List, cst.Tuple)) and expr.elements:
        # several inputs of one model ([images, conditions]): every one an array
        return all(not isinstance(e, cst.StarredElement) and numpy_array(a, e.value, depth + 1, seen)
                   for e in expr.elements)
    if isinstance(expr, cst.Dict) and expr.elements:
        return all(isinstance(e, cst.DictElement) and numpy_array(a, e.value, depth + 1, seen) for e in expr.elements)
    if isinstance(expr, cst.Call):
        return _numpy_call(a, expr, depth, seen)
    if isinstance(expr, cst.BinaryOperation):
        sides = [numpy_array(a, side, depth + 1, seen) for side in (expr.left, expr.right)]
        numbers = [isinstance(side, (cst.Integer, cst.Float)) for side in (expr.left, expr.right)]
        return any(sides) and all(s or n for s, n in zip(sides, numbers))
    if isinstance(expr, cst.Subscript):
        if isinstance(expr.value, cst.Call) and a.names(expr.value) & apis.ARRAY_TUPLE_FUNCTIONS:
            return True  # make_moons(1000)[0]
        return numpy_array(a, expr.value, depth + 1, seen)
    if isinstance(expr, cst.Name):
        return _numpy_name(a, expr, depth, seen)
    return False


def _numpy_call(a, expr: cst.Call, depth: int, seen: Set[int]) -> bool:
    """numpy_array of a call: a row-keeping method, an eager op, a draw, a transform, a helper of
    the project or a NumPy (or array-returning) function."""
    f = expr.func
    if isinstance(f, cst.Attribute) and f.attr.value in apis.ROW_PRESERVING_METHODS \
            and not any(n.startswith("numpy.") for n in a.names(expr)):  # np.reshape(x, ...) is a function
        return numpy_array(a, f.value, depth + 1, seen)  # x.astype(...), x.reshape(...)
    if isinstance(f, cst.Attribute) and f.attr.value in apis.ARRAY_RESULT_METHODS - apis.ROW_PRESERVING_METHODS \
            and numpy_array(a, f.value, depth + 1, seen):
        return True  # x.transpose([0, 2, 1]): still an array (fit() reads its first axis as the samples)
    if isinstance(f, cst.Attribute) and f.attr.value in apis.TENSOR_TO_ARRAY_METHODS and not expr.args \
            and isinstance(f.value, cst.Call) and any(n.startswith("tensorflow.") for n in a.names(f.value)):
        return True  # tf.image.resize(x, size).numpy(): a TensorFlow op's eager value
    if isinstance(f, cst.Attribute) and f.attr.value in apis.RANDOM_DRAWS - {"shuffle"} \
            and _numpy_generator(a, f.value):
        return True  # rng.rand(64, 8) of rng = np.random.default_rng(...)
    if isinstance(f, cst.Attribute) and f.attr.value in apis.SKLEARN_ROW_TRANSFORM_METHODS \
            and _sklearn_row_transformer(a, f.value):
        return True  # scaler.transform(X): one row per row of X
    if isinstance(f, cst.Name) and expr.args and not expr.args[0].keyword and not expr.args[0].star \
            and _keras_layer(a, f):
        # norm = layers.Normalization(); norm(data): a layer called eagerly on an array is a
        # tensor of its rows (fit() and a loop over its rows read it like the array)
        return numpy_array(a, expr.args[0].value, depth + 1, seen)
    if isinstance(f, cst.Name):
        functions = dataflow.callees(a, expr)
        if functions:  # a helper of this file (x_train = preprocess(x_train)): every value it returns
            returns = [r for fdef in functions for r in returned_values(fdef)]
            generator = any(isinstance(n, cst.Yield) for fdef in functions for n in walk(fdef.body))
            return bool(returns) and not generator and all(
                numpy_array(a, r, depth + 1, seen) for r in returns)
    external = _external_returns(a, expr, [])
    if external is not None:  # a function (or class method) of another module of the project
        other, returns = external
        return all(numpy_array(other, r, depth + 1, seen) for r in returns)
    names = a.names(expr)
    if names & apis.TENSOR_ROW_FUNCTIONS and expr.args and not expr.args[0].keyword and not expr.args[0].star \
            and not ("tensorflow.one_hot" in names and find_arg(expr, "axis", 4) is not None):
        return numpy_array(a, expr.args[0].value, depth + 1, seen)  # tf.one_hot(labels, 10): a row per row
    if names & apis.SKLEARN_ROW_TRANSFORM_FUNCTIONS:
        return True  # minmax_scale(y): an array of its argument's rows
    if any(n.startswith("numpy.") for n in names):
        return not names & apis.NUMPY_OWN_GENERATORS and not any(n.startswith("numpy.random.") and
                                                                  n.rsplit(".", 1)[1][:1].isupper() for n in names)
    return bool(names & apis.ARRAY_RETURNING_FUNCTIONS)


def _numpy_name(a, expr: cst.Name, depth: int, seen: Set[int]) -> bool:
    """numpy_array of a name: every binding of it an array (a value, a parameter's arguments,
    an element of a tuple or of arrays unpacked)."""
    bound = a.assigned_values(expr)
    if not bound:
        return False
    for origin, value in bound:
        if id(origin) in seen:
            continue  # a binding reading its own name (x = x[p]): what the others make
        seen.add(id(origin))
        if value is not None:
            if not numpy_array(a, value, depth + 1, seen):
                return False
        elif isinstance(origin, cst.Param):
            # a parameter: what every call of its function in this file passes
            # (vae.train(x_train, x_test) of x_train = x_train.astype(...))
            values = a.parameter_values(origin)
            if not values or not all(numpy_array(a, v, depth + 1, seen) for v in values):
                return False
        elif isinstance(origin, cst.Name) and dataflow.element_value(a, origin) is not None:
            # x, y = x[p], y[p]: the element of the tuple it is given
            if not numpy_array(a, dataflow.element_value(a, origin), depth + 1, seen):
                return False
        elif not _unpacked_from_arrays(a, origin, depth, seen):
            return False
    return True


def _external_returns(a, call, path: List[int]):
    """(analysis of its module, the values at ``path`` of every tuple it
    returns) when call runs a function of another module of the project, or
    a class or static method of a class there (``MNIST.get_data()``), that
    is no generator; None otherwise."""
    found = external_callable(a, call) if isinstance(call, cst.Call) else None
    if found is None:
        return None
    other, fdef = found
    if any(isinstance(n, (cst.Yield, cst.Await)) for n in walk(fdef.body)):
        return None
    out = []
    for ret in returned_values(fdef):
        for i in path:
            if not isinstance(ret, (cst.Tuple, cst.List)) or i >= len(ret.elements) \
                    or not isinstance(ret.elements[i], cst.Element):
                return None
            ret = ret.elements[i].value
        out.append(ret)
    return (other, out) if out else None


def _sklearn_row_transformer(a, receiver) -> bool:
    """A scikit-learn transformer of apis.SKLEARN_ROW_TRANSFORMERS: made right
    there (``StandardScaler().fit_transform(X)``), or a name bound only to such."""
    values = [receiver] if isinstance(receiver, cst.Call) else \
        [v for _, v in a.assigned_values(receiver)] if isinstance(receiver, cst.Name) else []
    return bool(values) and all(isinstance(v, cst.Call) and a.names(v) & apis.SKLEARN_ROW_TRANSFORMERS
                                for v in values)


def _keras_layer(a, name: cst.Name) -> bool:
    """A name bound only to constructions of Keras layer classes."""
    values = [v for _, v in a.assigned_values(name)]
    return bool(values) and all(
        isinstance(v, cst.Call) and any(n.startswith(apis.KERAS_LAYER_MODULES) and n.rsplit(".", 1)[1][:1].isupper()
                                        for n in a.names(v)) for v in values)


def _numpy_generator(a, expr) -> bool:
    """A name bound only to NumPy generator constructions (np.random.RandomState(0))."""
    if not isinstance(expr, cst.Name):
        return False
    values = [v for _, v in a.assigned_values(expr)]
    return bool(values) and all(isinstance(v, cst.Call) and a.names(v) & apis.NUMPY_OWN_GENERATORS for v in values)


def _unpacked_from_arrays(a, origin, depth: int = 0, seen: Optional[Set[int]] = None) -> bool:
    """``(x_train, y_train), (x_test, y_test) = keras.datasets.mnist.load_data()``,
    ``X, y = make_moons(1000)``, ``x, y, _, _ = MNIST.get_data()`` of another
    module of the project whose returns hold arrays there."""
    unpack = unpacked(a, origin) if isinstance(origin, cst.Name) else None
    if unpack is not None and isinstance(unpack[0].value, cst.Call) and depth < 8:
        external = _external_returns(a, unpack[0].value, unpack[1])
        if external is not None:
            other, values = external
            return all(numpy_array(other, v, depth + 1, seen) for v in values)
    node = origin
    for _ in range(6):
        node = a.parent(node)
        if isinstance(node, cst.Assign):
            value = node.value
            return isinstance(value, cst.Call) and any(
                n.startswith(apis.KERAS_ARRAY_DATASETS_MODULE) and n.endswith("." + apis.KERAS_ARRAY_DATASETS_LOADER)
                or n in apis.ARRAY_TUPLE_FUNCTIONS for n in a.names(value))
        if node is None or isinstance(node, (cst.BaseStatement, cst.For)):
            return False
    return False


@fact
def external_array_arguments(other, fdef: cst.FunctionDef, call: cst.Call) -> Optional[List[cst.BaseExpression]]:
    """For a helper of another module whose every dataset source is
    ``from_tensor_slices`` of its own parameters (arrays it is handed, not
    rebound in it): the arrays this call hands it, in source order; None
    otherwise. Sliced alike, they keep their rows paired. None too when the
    helper makes its samples of neighbouring rows (windows of a series, a
    batch batched again, a take/skip split): rows sliced by rank before
    that would make every rank's windows of every size-th step."""
    sources = [s for r in returned_values(fdef) for s in other.dataset_sources(r)]
    if not sources or not all(other.is_name(s, {"tensorflow.data.Dataset.from_tensor_slices"}) for s in sources):
        return None
    for r in returned_values(fdef):
        methods = chain_methods(other, r)
        if set(methods) & apis.POSITIONAL_DATASET_METHODS \
                or sum(m in apis.ROW_GROUPING_DATASET_METHODS for m in methods) > 1:
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
