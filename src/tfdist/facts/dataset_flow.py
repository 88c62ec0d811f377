"""Where a dataset comes from: the read-only half of dividing the work.

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
from typing import List, Optional, Set, Tuple
import libcst as cst
from .. import apis
from ..engine import dataflow
from ..engine.analysis import returned_values
from ..engine.scopes import walk
from ..engine.analysis import Analysis, ProjectContext
from .syntax import find_arg, has_star_args, method_name


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
    if isinstance(expr, cst.BinaryOperation):
        sides = [numpy_array(a, side, depth + 1, seen) for side in (expr.left, expr.right)]
        numbers = [isinstance(side, (cst.Integer, cst.Float)) for side in (expr.left, expr.right)]
        return any(sides) and all(s or n for s, n in zip(sides, numbers))
    if isinstance(expr, cst.Subscript):
        if isinstance(expr.value, cst.Call) and a.names(expr.value) & apis.ARRAY_TUPLE_FUNCTIONS:
            return True  # make_moons(1000)[0]
        return numpy_array(a, expr.value, depth + 1, seen)
    if isinstance(expr, cst.Name):
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
    return False


def external_callable(a, call: cst.Call):
    """(analysis of its module, FunctionDef) of a function of another module
    of the project, or of a class or static method of a class there
    (``MNIST.get_data(...)``), that call runs; None otherwise."""
    found = external_function_of(a, call)
    if found is None and isinstance(call.func, cst.Attribute):
        owner = _external_definition(a, call.func.value, cst.ClassDef)
        if owner is not None:
            other, klass = owner
            found = next(((other, m) for m in klass.body.body if isinstance(m, cst.FunctionDef)
                          and m.name.value == call.func.attr.value and class_level_method(m)), None)
    return found


def class_level_method(fdef: cst.FunctionDef) -> Optional[str]:
    """"classmethod" or "staticmethod" when fdef is decorated so."""
    return next((d.decorator.value for d in fdef.decorators if isinstance(d.decorator, cst.Name)
                 and d.decorator.value in ("classmethod", "staticmethod")), None)


def argument_at(a, fdef: cst.FunctionDef, call: cst.Call, param: cst.Param):
    """The value ``param`` of ``fdef`` (in the module ``a`` analyses) has at
    ``call``: the argument given, else its default (None when neither is
    known, or with ``*args``). A method's ``self``/``cls`` is not among the
    call's positional arguments."""
    if has_star_args(call):
        return None
    params = list(fdef.params.params)
    index = None
    if param in params:
        bound_first = a.method_owner(fdef) is not None and class_level_method(fdef) != "staticmethod"
        index = params.index(param) - (1 if bound_first else 0)
    given = find_arg(call, param.name.value, index)
    return given.value if given is not None else param.default


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


def literal_false(node) -> bool:
    return isinstance(node, cst.Name) and node.value in ("False", "None")


def literal_true(node) -> bool:
    return node is not None and not literal_false(node) and not (
        isinstance(node, cst.Integer) and node.value == "0")


def directory_reader_name(a, src: cst.Call) -> Optional[str]:
    """The one name a directory reader (``image_dataset_from_directory``...)
    is bound to (``train_ds = reader(...)``), else None."""
    if not a.is_name(src, apis.KERAS_DIRECTORY_DATASETS):
        return None
    assign = a.parent(src)
    if not isinstance(assign, cst.Assign) or len(assign.targets) != 1 or not isinstance(assign.targets[0].target, cst.Name):
        return None
    return assign.targets[0].target.value


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


def split_source(a, expr) -> Optional[cst.Call]:
    """The source call when expr is one dataset taken by position from the
    list of splits a source returns (``splits[1]`` of ``tfds.load(split=[...])``)."""
    if isinstance(expr, cst.Subscript) and integer_index(expr) is not None:
        return list_of_splits(a, expr.value)
    if isinstance(expr, cst.Subscript):
        return dict_of_splits_source(a, expr.value)
    return None


def dict_of_splits_source(a, expr) -> Optional[cst.Call]:
    """The tfds.load call when expr is the dict of splits it returns (split=None)."""
    if not isinstance(expr, cst.Name):
        return None
    for origin, value in a.assigned_values(expr):
        if isinstance(value, cst.Call) and a.is_name(value, apis.TFDS_LOAD) and tfds_shape(a, value) == ("dict", False):
            return value
        if value is None and isinstance(origin, cst.Name):
            unpack = unpacked(a, origin)
            if unpack is not None:
                kind, src = tuple_source_element(a, unpack[0].value, unpack[1])
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


def property_values(a, expr: cst.Attribute) -> List[cst.BaseExpression]:
    """What an attribute of an instance of a user class holds: the values
    assigned to ``self.<attr>``, or what its property returns (``window.train``)."""
    return [v for cd in a.instance_classes(expr.value) for v in a.attribute_values(cd, expr.attr.value)]


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


def call_sites(a, fdef: cst.FunctionDef) -> List[cst.Call]:
    """The calls of this module running fdef: by its name, or as a method."""
    name = fdef.name.value
    return [c for c in a.calls if ((isinstance(c.func, cst.Name) and c.func.value == name)
                                   or (isinstance(c.func, cst.Attribute) and c.func.attr.value == name))
            and fdef in dataflow.callees(a, c)]


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


def external_function(ctx, call: cst.Call):
    """(analysis of its module, FunctionDef) of a function imported from
    another module of the project (the project facts the pipeline is handed
    carry its module's source), or None."""
    return external_function_of(ctx.a, call)


def external_function_of(a, call: cst.Call):
    """external_function, for an analysis (each other module is parsed and
    analysed once per analysis)."""
    found = _external_definition(a, call.func, cst.FunctionDef)
    return found


def _external_definition(a, func, kind):
    """(analysis of its module, the top-level def or class of ``kind``)
    that ``func`` (a name or dotted name) refers to in another module of
    the project, or None."""
    if not isinstance(func, (cst.Name, cst.Attribute)):
        return None
    cache = a.__dict__.setdefault("_external_modules", {})
    for qual in sorted(a.qualified(func)):
        found = a.project.functions.get(a.project.absolute(qual))
        if found is None:
            continue
        module_name, source = found
        if module_name not in cache:
            try:
                module = cst.parse_module(source)
            except (cst.ParserSyntaxError, UnicodeDecodeError, RecursionError):
                module = None
            cache[module_name] = Analysis(module, ProjectContext(module_name)) if module is not None else None
        other = cache[module_name]
        if other is None:
            continue
        name = qual.rpartition(".")[2]
        for stmt in other.module.body:
            if isinstance(stmt, kind) and stmt.name.value == name:
                return other, stmt
    return None


def external_methods_of(a, call: cst.Call) -> list:
    """(analysis of its module, method) for ``obj.method(...)`` when obj is
    (a name bound once to) an instance of a class another module of the
    project defines: ``training = Data(...)`` then ``training.generator(32)``."""
    if not isinstance(call.func, cst.Attribute):
        return []
    obj = call.func.value
    if isinstance(obj, cst.Name):
        bound = a.assigned_values(obj)
        if len(bound) != 1 or not isinstance(bound[0][1], cst.Call):
            return []
        obj = bound[0][1]
    if not isinstance(obj, cst.Call):
        return []
    found = _external_definition(a, obj.func, cst.ClassDef)
    if found is None:
        return []
    other, cd = found
    return [(other, f) for f in other.class_methods(cd, call.func.attr.value)]


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


def external_dataset(a, expr) -> bool:
    """expr holds a dataset helpers of other modules of the project made (external_sites)."""
    return external_sites(a, expr) is not None


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


def same_on_every_rank(a, value) -> bool:
    """``value`` is the same number in every process: an integer literal,
    or a name every binding reaching it binds to one."""
    if isinstance(value, cst.Integer):
        return True
    if isinstance(value, cst.Name):
        bound = a.assigned_values(value)
        return bool(bound) and all(isinstance(v, cst.Integer) for _, v in bound)
    return False


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
