"""Batch helper functions (``next_batch(x, y, n)``): which arrays they read rows of, whether
they are pure, and constants and schedules they take.
"""
from __future__ import annotations

from typing import List, Optional, Set
import libcst as cst
from .. import apis
from ..engine.memo import fact
from ..engine import analysis as A
from ..engine import dataflow
from ..engine.scopes import walk
from .syntax import calls_in, find_arg, has_star_args, method_name, names_a_field, receiver
from . import sample_arrays


@fact
def is_constant(a: A.Analysis, expr, depth: int = 0) -> bool:
    """A literal (``0.5``, ``True``), or a name only ever bound to literals:
    a hyper-parameter fed each step (dropout keep probability, a training
    flag), not data."""
    if isinstance(expr, (cst.Integer, cst.Float, cst.SimpleString)):
        return True
    if isinstance(expr, cst.UnaryOperation):
        return is_constant(a, expr.expression, depth)
    if isinstance(expr, cst.BinaryOperation):
        return is_constant(a, expr.left, depth) and is_constant(a, expr.right, depth)
    if isinstance(expr, cst.Call) and a.is_name(expr, apis.NUMPY_CONSTANT_ARRAYS):
        # np.ones([batch_size]), np.concatenate([np.ones(...), np.zeros(...)], axis=0):
        # the shapes and parts given are literals, sizes or such arrays
        return all(is_constant(a, arg.value, depth) or _is_shape(a, arg.value, depth) for arg in expr.args)
    if isinstance(expr, cst.Name):
        if expr.value in ("True", "False", "None"):
            return True
        bound = a.assigned_values(expr)
        if depth >= 4 or not bound:
            return False
        for origin, value in bound:
            if isinstance(origin, cst.Param):
                # a parameter: constant if its default and everything passed to it are
                if origin.default is not None and not is_constant(a, origin.default, depth + 1):
                    return False
                passed = a.argument_values(origin)
                if (origin.default is None and not passed) or not all(is_constant(a, arg, depth + 1) for _, arg in passed):
                    return False
            elif value is None or not is_constant(a, value, depth + 1):
                return False
        return True
    return False


def rows_reshaped(value) -> bool:
    """``y[idx].reshape(-1, 1)``: rows of an array, kept as rows."""
    return isinstance(value, cst.Call) and method_name(value) in apis.ROW_PRESERVING_METHODS \
        and isinstance(receiver(value), cst.Subscript)


@fact
def row_kept_source(a: A.Analysis, value) -> Optional[cst.BaseExpression]:
    """The array ``value`` is made of row for row, when it is a conversion
    that keeps the rows: ``images`` in ``tf.convert_to_tensor(images,
    dtype=...)`` or ``np.asarray(images)`` (apis.ROW_KEEPING_ARRAY_FUNCTIONS),
    ``xb.astype(...)`` (apis.ROW_KEEPING_CONVERSIONS), ``xb / 255.`` (a
    number applied to every element), ``np.transpose([yb])`` (a column of
    yb's rows, apis.COLUMN_OF_ROWS); None otherwise."""
    if isinstance(value, cst.Call) and isinstance(value.func, cst.Attribute) \
            and value.func.attr.value in apis.ROW_KEEPING_CONVERSIONS:
        return value.func.value
    if isinstance(value, cst.Call) and not has_star_args(value):
        first = value.args[0] if value.args and value.args[0].keyword is None else None
        if first is not None and len(value.args) == 1 and a.is_name(value, apis.COLUMN_OF_ROWS) \
                and isinstance(first.value, cst.List) and len(first.value.elements) == 1 \
                and isinstance(first.value.elements[0], cst.Element):
            return first.value.elements[0].value  # np.transpose([y[idx]]): y's rows, as a column
        name = a.is_name(value, apis.ROW_KEEPING_ARRAY_FUNCTIONS)
        if first is not None and name is not None and sample_arrays.keeps_rows(value, name):
            return first.value
        return None
    if isinstance(value, cst.BinaryOperation) and isinstance(
            value.operator, (cst.Divide, cst.Multiply, cst.Add, cst.Subtract)):
        numbers = (cst.Integer, cst.Float)
        if isinstance(value.right, numbers):
            return value.left
        if isinstance(value.left, numbers):
            return value.right
    return None


@fact
def pure_batch_function_argument(a: A.Analysis, call) -> Optional[cst.BaseExpression]:
    """The batch a function of this module is given, when its result is
    computed from that batch alone (``one_hot(yb)``, ``normalise(xb)``,
    ``one_hot(get_batch(y, step))``): the call's one argument that is not a
    constant, for a plain function (no method) that reads nothing but its
    parameters, its own locals, imported modules, built-ins, functions and
    constants of the module -- no module-level array (a lookup table indexed
    by the batch would read data tfdist divides elsewhere), no state kept
    across calls, no random draw. The same rows in give what the original
    fed for those rows. None otherwise."""
    if not isinstance(call, cst.Call) or not isinstance(call.func, cst.Name) or has_star_args(call):
        return None
    fdefs = dataflow.callees(a, call)
    if len(fdefs) != 1 or a.method_owner(fdefs[0]) is not None or a.enclosing_function(fdefs[0]) is not None:
        return None
    fdef = fdefs[0]
    if any(isinstance(n, (cst.Global, cst.Nonlocal, cst.Yield, cst.Lambda, cst.FunctionDef)) for n in walk(fdef.body)):
        return None
    if any(q.startswith(apis.RANDOM_MODULE_PREFIXES) for c in calls_in(fdef.body) for q in a.names(c)):
        return None
    for name in walk(fdef.body):
        if isinstance(name, cst.Name) and not _reads_only_own_or_fixed(a, name, fdef):
            return None
    rows = [arg.value for arg in call.args if not is_constant(a, arg.value)]
    if not rows or rows[0] is not call.args[0].value:
        return None
    return rows[0] if all(_fixed_table(a, v, call) for v in rows[1:]) else None


def _fixed_table(a: A.Analysis, value, call: cst.Call) -> bool:
    """An argument given beside the batch (``str_idx(x[i:i + B], dictionary,
    maxlen)``) that is the same at every step and whole on every rank: a
    name bound only outside the loops around the call, whose rows no step
    of those loops reads (an array tfdist divides is read by rows there;
    handed whole to the function it would differ from the original's)."""
    loop = dataflow.outermost_loop(a, call)
    if not isinstance(value, cst.Name) or loop is None:
        return False
    bound = a.assigned_values(value)
    if not bound or any(dataflow.is_inside(a, o, loop) for o, _ in bound):
        return False
    for n in walk(loop):
        if isinstance(n, cst.Subscript) and isinstance(n.value, cst.Name) and n.value.value == value.value:
            return False  # x[i:i + B]: rows of it
        if isinstance(n, cst.Call) and n is not call and any(
                isinstance(arr, cst.Name) and arr.value == value.value for arr in batch_helper_arrays(a, n) or ()):
            return False  # get_batch(x, step): rows of it
    return True


def _reads_only_own_or_fixed(a: A.Analysis, name: cst.Name, fdef: cst.FunctionDef) -> bool:
    """A name in a function's body: an attribute's or keyword's name, or bound
    in the function, by an import, a ``def``, a built-in, or a module-level
    constant."""
    if names_a_field(a, name):
        return True
    bindings = a.scopes.lookup(name)
    if not bindings:
        return False  # bound nowhere tfdist can see
    for b in bindings:
        node = b.node
        if node is None or b.imported is not None or isinstance(node, (cst.Import, cst.ImportFrom, cst.FunctionDef)):
            continue
        if node is fdef or any(x is fdef for x in a.ancestors(node)):
            continue  # a parameter or local of the function
        value = dataflow.assigned_by(a, node) if isinstance(node, cst.Name) else None
        if value is None or not isinstance(value, (cst.Integer, cst.Float, cst.SimpleString)):
            return False
    return True


@fact
def batch_helper_arrays(a: A.Analysis, call, draws: bool = False) -> Optional[List[cst.BaseExpression]]:
    """The arrays a step's batch helper of this module cuts rows from
    (``get_next_batch(images, labels, step)`` with ``def
    get_next_batch(images, labels, step): ... return images[o:o + B],
    labels[o:o + B]``): the arguments for the parameters it subscripts, when
    it reads them only by rows (``p[...]`` with an index made of no other
    array, ``p.shape``, ``len(p)``) and changes none. Slicing those arrays by
    rank keeps whatever pairs the helper makes: it cuts the same rows of
    each. None when the call is not such a helper. ``draws``: one drawing
    the rows at random (``idx = np.random.randint(len(X), size=n)``) counts
    too (the caller runs it where each draw is its own)."""
    if not isinstance(call, cst.Call) or has_star_args(call):
        return None
    fdefs = dataflow.callees(a, call)
    if len(fdefs) != 1 or a.method_owner(fdefs[0]) is not None or not isinstance(call.func, cst.Name):
        return None
    fdef = fdefs[0]
    if not draws and any(q.startswith(apis.RANDOM_MODULE_PREFIXES) for c in calls_in(fdef.body) for q in a.names(c)):
        return None  # it draws its rows at random: a sampler, drawn per rank (samplers)
    params = fdef.params.params
    if fdef.params.star_arg not in (None, cst.MaybeSentinel.DEFAULT) or fdef.params.star_kwarg is not None \
            or fdef.params.kwonly_params or fdef.params.posonly_params:
        return None
    uses = {p.name.value: [n for n in walk(fdef.body) if isinstance(n, cst.Name) and n.value == p.name.value
                           and any(b.node is p for b in a.scopes.lookup(n))] for p in params}
    arrays = {name for name, refs in uses.items()
              if any(isinstance(a.parent(r), cst.Subscript) and a.parent(r).value is r for r in refs)}
    if not arrays:
        return None
    batches = _sequence_parameters(a, fdef, uses, arrays)
    for name in arrays:
        for ref in uses[name]:
            use = array_use(a, ref)
            if use not in ("rows", "size"):
                return None
            if use == "rows" and any(_reads_array(a, n, arrays, uses) or (isinstance(n, cst.Name) and n.value in batches)
                                     for e in a.parent(ref).slice for n in walk(e)):
                return None  # indexed by another array's values: a lookup, not a cut
    out = []
    for index, param in enumerate(params):
        if param.name.value not in arrays:
            continue
        arg = find_arg(call, param.name.value, index)
        if arg is None or not isinstance(arg.value, cst.Name):
            return None
        out.append(arg.value)
    return out


def _sequence_parameters(a: A.Analysis, fdef: cst.FunctionDef, uses, arrays: Set[str]) -> Set[str]:
    """Names in fdef holding a parameter that is not cut by rows but is a
    sequence itself -- its size taken, reshaped, iterated -- (labels in
    ``one_hot(labels, table)``: ``table[labels]`` looks rows up by the
    batch's values, it does not cut them), and the locals bound from one
    (``y_ = labels.reshape(-1)``)."""
    out = set()
    for name, refs in uses.items():
        if name in arrays:
            continue
        for ref in refs:
            parent = a.parent(ref)
            if array_use(a, ref) == "size" or (isinstance(parent, cst.Attribute) and parent.value is ref) \
                    or (isinstance(parent, cst.For) and parent.iter is ref):
                out.add(name)
                break
    for stmt in walk(fdef.body):
        if isinstance(stmt, cst.Assign) and any(isinstance(n, cst.Name) and n.value in out for n in walk(stmt.value)):
            out |= {n.value for t in stmt.targets for n in walk(t.target) if isinstance(n, cst.Name)}
    return out


def _reads_array(a: A.Analysis, node, arrays: Set[str], uses) -> bool:
    """node (in an index) is a use of one of the helper's array parameters
    other than by its size."""
    if not isinstance(node, cst.Name) or node.value not in arrays or all(node is not r for r in uses[node.value]):
        return False
    return array_use(a, node) != "size"


@fact
def array_use(a: A.Analysis, node) -> str:
    """How an expression naming an array (a name, ``self.x``) is used:
    "rows" (``x[i]``, ``x[i:j]`` read), "size" (``len(x)``, ``x.shape``),
    "shuffle" (reordered in place, apis.IN_PLACE_SHUFFLES), "written"
    (``x[i] = v``) or "other"."""
    parent = a.parent(node)
    if isinstance(parent, cst.Subscript) and parent.value is node:
        return "written" if isinstance(a.parent(parent), cst.AssignTarget) else "rows"
    if isinstance(parent, cst.Attribute) and parent.value is node and parent.attr.value == "shape":
        return "size"
    if isinstance(parent, cst.Arg) and isinstance(a.parent(parent), cst.Call):
        call = a.parent(parent)
        if a.is_name(call, {"builtins.len"}):
            return "size"
        if a.is_name(call, apis.IN_PLACE_SHUFFLES) and call.args and call.args[0] is parent:
            return "shuffle"
    return "other"


@fact
def rows_under(a: A.Analysis, value):
    """``value`` with every row-keeping conversion around it peeled off
    (row_kept_source, repeatedly): ``x[i:j]`` in
    ``tf.convert_to_tensor(x[i:j].astype(...))``."""
    inner = row_kept_source(a, value) if value is not None else None
    while inner is not None:
        value, inner = inner, row_kept_source(a, inner)
    return value


@fact
def reorders_itself(a: A.Analysis, origin, name: str) -> bool:
    """The binding ``origin`` of ``name`` rebinds it to a reordering or a
    selection of its own rows: ``X, Y = shuffle(X, Y)``, ``X = X[perm]``."""
    if isinstance(origin, cst.Assign) and len(origin.targets) == 1 and isinstance(origin.targets[0].target, cst.Name):
        origin = origin.targets[0].target  # a plain assignment is its own origin
    if not isinstance(origin, cst.Name):
        return False
    assign = a.parent(origin)
    if isinstance(assign, cst.AssignTarget) and assign.target is origin:
        position = None
    else:
        element = a.parent(origin)
        holder = a.parent(element)
        assign = a.parent(holder)
        if not (isinstance(element, cst.Element) and isinstance(holder, (cst.Tuple, cst.List))
                and isinstance(assign, cst.AssignTarget) and assign.target is holder):
            return False
        position = [e.value for e in holder.elements].index(origin)
    statement = a.parent(assign)
    if not isinstance(statement, cst.Assign) or len(statement.targets) != 1:
        return False
    value = statement.value
    if position is not None and isinstance(value, (cst.Tuple, cst.List)) and len(value.elements) == len(holder.elements) \
            and not any(isinstance(e, cst.StarredElement) for e in value.elements):
        value, position = value.elements[position].value, None  # X, Y = X[perm], Y[perm]: X's own element
    if position is None and isinstance(value, cst.Subscript) and isinstance(value.value, cst.Name) \
            and value.value.value == name and len(value.slice) == 1 \
            and isinstance(value.slice[0].slice, cst.Index) \
            and isinstance(value.slice[0].slice.value, (cst.Name, cst.Call)):
        return True  # X = X[perm], X = X[np.random.permutation(n)]
    if not (isinstance(value, cst.Call) and a.is_name(value, apis.JOINT_ROW_SHUFFLES)):
        return False
    arrays = [arg.value for arg in value.args if arg.keyword is None and not arg.star]
    index = position or 0
    return index < len(arrays) and isinstance(arrays[index], cst.Name) and arrays[index].value == name \
        and (position is not None or len(arrays) == 1)


@fact
def shuffled_with(a: A.Analysis, origin) -> List[str]:
    """The names a joint shuffle binding ``origin`` reorders together
    (``X, Y = shuffle(X, Y)``: X and Y); [] for anything else."""
    statement = next((p for p in [origin, *a.ancestors(origin)] if isinstance(p, cst.Assign)), None)
    if statement is None or not isinstance(statement.value, cst.Call) \
            or not a.is_name(statement.value, apis.JOINT_ROW_SHUFFLES):
        return []
    return [arg.value.value for arg in statement.value.args if isinstance(arg.value, cst.Name) and not arg.keyword]


@fact
def is_schedule(a: A.Analysis, expr, depth: int = 0) -> bool:
    """A hyper-parameter recomputed from constants and step counters only
    (``lr = lo + (hi - lo) * math.exp(-i / decay)``, a step index fed to a
    placeholder): the same on every rank at the same step, not data."""
    if is_constant(a, expr):
        return True
    if depth > 6:
        return False
    if isinstance(expr, cst.UnaryOperation):
        return is_schedule(a, expr.expression, depth + 1)
    if isinstance(expr, cst.BinaryOperation):
        return is_schedule(a, expr.left, depth + 1) and is_schedule(a, expr.right, depth + 1)
    if isinstance(expr, cst.Call):
        names = a.names(expr)
        math = bool(names) and all(n.startswith(apis.SCALAR_MATH_PREFIXES) or n in apis.SCALAR_MATH_BUILTINS
                                   for n in names)
        return math and all(is_schedule(a, arg.value, depth + 1) for arg in expr.args)
    if not isinstance(expr, cst.Name):
        return False
    bound = a.assigned_values(expr)
    if not bound:
        return False
    for origin, value in bound:
        if isinstance(value, cst.BinaryOperation) and isinstance(value.left, cst.Name) \
                and value.left.value == expr.value and is_constant(a, value.right):
            continue  # step = step + 1, as step += 1
        if value is not None:
            if not is_schedule(a, value, depth + 1):
                return False
            continue
        par = a.parent(origin) if isinstance(origin, cst.Name) else None
        if isinstance(par, cst.For) and par.target is origin and isinstance(par.iter, cst.Call) \
                and a.is_name(par.iter, {"builtins.range"}):
            continue  # a step counter
        if isinstance(origin, cst.AugAssign) or isinstance(par, cst.AugAssign):
            aug = origin if isinstance(origin, cst.AugAssign) else par
            if is_constant(a, aug.value):
                continue  # step += 1
        return False
    return True


def _is_shape(a: A.Analysis, expr, depth: int) -> bool:
    """A list or tuple of constants (a shape), or of constant arrays."""
    return isinstance(expr, (cst.List, cst.Tuple)) and all(
        isinstance(e, cst.Element) and is_constant(a, e.value, depth) for e in expr.elements)
