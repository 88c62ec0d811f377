"""Pieces shared by the TF1 rules (Session and MonitoredSession)."""
from __future__ import annotations

import ast
from dataclasses import dataclass
from typing import Dict, List, Optional, Set, Tuple
import libcst as cst
from .. import apis
from ..engine import analysis as A
from ..engine import dataflow
from ..engine.scopes import walk
from .syntax import append_arg, calls_in, find_arg, has_star_args, mentions, method_name, names_a_field, positional, receiver
from . import dataset_flow


# TF1 parameter-server distribution: such a script is distributed already.
PS_DISTRIBUTION = {
    "tensorflow.train.ClusterSpec",
    "tensorflow.train.Server",
    "tensorflow.train.replica_device_setter",
    "tensorflow.train.SyncReplicasOptimizer",
}
CHIEF_SESSION_CREATOR = "tensorflow.train.ChiefSessionCreator"
GPU_OPTIONS = "tensorflow.GPUOptions"


def pinned_configs(ctx) -> set:
    """Session configs already given a GPU per process (per conversion)."""
    return ctx.state("tf1_common.pinned")


# Hooks that write files: they run on rank 0 only.
FILE_WRITING_HOOKS = {
    "tensorflow.train.CheckpointSaverHook",
    "tensorflow.train.SummarySaverHook",
    "tensorflow.train.ProfilerHook",
}


def optimizer_calls(a: A.Analysis) -> List[cst.Call]:
    return [c for c in a.calls if any(t.kind == A.TF1_OPTIMIZER and t.call is c for t in a.types(c))]


def train_op_names(a: A.Analysis) -> Set[str]:
    """Names bound to ``optimizer.minimize(...)`` / ``apply_gradients``
    results, and to what a function returning one returns
    (``train_op = make_train_op(loss)``)."""
    names: Set[str] = set()
    returning = set()
    for c in a.calls:
        if method_name(c) in ("minimize", "apply_gradients"):
            for anc in a.ancestors(c):
                if isinstance(anc, cst.Assign):
                    for t in anc.targets:
                        if isinstance(t.target, cst.Name):
                            names.add(t.target.value)
                    break
                if isinstance(anc, cst.Return):
                    returning.add(a.enclosing_function(anc))
                    break
                if isinstance(anc, cst.BaseStatement):
                    break
    for fdef in (f for fs in a.functions.values() for f in fs):
        if any(isinstance(r, cst.Return) and isinstance(r.value, cst.Name) and r.value.value in names
               and a.enclosing_function(r) is fdef for r in walk(fdef.body)):
            returning.add(fdef)
    returning.discard(None)
    for c in a.calls:
        if isinstance(c.func, cst.Name) and any(c.func.value == f.name.value and a.method_owner(f) is None for f in returning):
            assign = a.parent(c)
            if isinstance(assign, cst.Assign) and assign.value is c:
                names |= {t.target.value for t in assign.targets if isinstance(t.target, cst.Name)}
    return names


def add_kwarg(call: cst.Call, arg: cst.Arg) -> cst.Call:
    """Add a keyword argument last; on a line of its own when the call has one argument per line."""
    args = list(call.args)
    if args and not isinstance(args[-1].comma, cst.Comma):
        sep = args[-2].comma.whitespace_after if len(args) >= 2 and isinstance(args[-2].comma, cst.Comma) \
            else call.whitespace_before_args
        if isinstance(sep, cst.ParenthesizedWhitespace):
            args[-1] = args[-1].with_changes(comma=cst.Comma(whitespace_after=sep))
            return call.with_changes(args=[*args, arg])
    return append_arg(call, arg)


def tf1_prefix(ctx, call: cst.Call) -> str:
    """``tf`` or ``tf.compat.v1``: the TF1 namespace the session was built from."""
    a = ctx.a
    func = call.func
    if isinstance(func, cst.Attribute):
        prefix = func.value
        canon = a.names(prefix)
        if "tensorflow.train" in canon and isinstance(prefix, cst.Attribute):
            prefix = prefix.value  # tf.train.MonitoredTrainingSession -> tf
            canon = a.names(prefix)
        if "tensorflow" in canon:
            return a.code(prefix)
    return tf1_namespace(ctx)


def tf1_namespace(ctx) -> str:
    """The TF1 namespace under the name tfdist uses for TensorFlow: ``tf``
    when it is tensorflow.compat.v1, else ``tf.compat.v1``."""
    tf = ctx.name("tf")
    bound = ctx.imports.bound.get(tf)
    return tf if bound == "tensorflow.compat.v1" else f"{tf}.compat.v1"


def initialized_for_training(a: A.Analysis) -> List[cst.BaseExpression]:
    """The datasets a reinitializable iterator
    (``tf.data.Iterator.from_structure``) is switched to by
    ``sess.run(init)``, ``init = iterator.make_initializer(train_data)``,
    where the statements after that run (in its block) run the train op:
    the training data, not the test data the same iterator is switched to
    before evaluating. The initializer is followed through names, ``self``
    attributes and parameters (``train_one_epoch(sess, self.train_init)``)."""
    runs = train_runs(a, a.module, train_op_names(a))
    out: List[cst.BaseExpression] = []
    for c in a.calls:
        if method_name(c) != "run" or not c.args or c.args[0].keyword is not None:
            continue
        datasets = _initializer_datasets(a, c.args[0].value)
        if not datasets:
            continue
        stmt = a.statement_of(c)
        block = a.parent(stmt)
        body = list(getattr(block, "body", ()))
        if stmt not in body:
            continue
        if any(runs_train_op_through_calls(a, later, runs) for later in body[body.index(stmt) + 1:]):
            out += [d for d in datasets if all(d is not o for o in out)]
    return out


def _initializer_datasets(a: A.Analysis, op, depth: int = 0) -> List[cst.BaseExpression]:
    """``train_data`` for an op made by ``iterator.make_initializer(train_data)``."""
    if depth > 6:
        return []
    if isinstance(op, cst.Call):
        return [op.args[0].value] if method_name(op) == "make_initializer" and op.args else []
    values: List[cst.BaseExpression] = []
    if isinstance(op, cst.Name):
        for origin, value in a.assigned_values(op):
            if value is not None:
                values.append(value)
            elif isinstance(origin, cst.Param):
                values += [arg for _, arg in a.argument_values(origin)]
    elif isinstance(op, cst.Attribute):
        for cd in a.instance_classes(op.value):
            values += a.attribute_values(cd, op.attr.value)
    return [d for v in values for d in _initializer_datasets(a, v, depth + 1)]


def train_runs(a: A.Analysis, node, train_ops: Set[str]) -> List[cst.Call]:
    """``sess.run(train_op, ...)`` / ``train_op.run(...)`` calls inside node."""
    out = []
    for c in calls_in(node):
        if method_name(c) != "run":
            continue
        if c.args and c.args[0].keyword is None and (mentions(c.args[0].value, train_ops) or any(
                method_name(x) == "minimize" for x in calls_in(c.args[0].value))
                or _holds_train_op(a, c.args[0].value)):
            out.append(c)
            continue
        recv = receiver(c)
        if isinstance(recv, cst.Name) and recv.value in train_ops:
            out.append(c)
        elif isinstance(recv, cst.Call) and method_name(recv) == "minimize":
            out.append(c)
    return out


def train_op_strings(a: A.Analysis) -> Set[str]:
    """The graph names given to train ops (``optimizer.minimize(cost,
    name="train")``): a session may run one by that name
    (``sess.run(["train", "cost:0"], feed_dict={"features:0": x})``)."""
    out = set()
    for c in a.calls:
        if method_name(c) in ("minimize", "apply_gradients"):
            arg = find_arg(c, "name")
            if arg is not None and isinstance(arg.value, cst.SimpleString):
                out.add(str(ast.literal_eval(arg.value.value)))
    return out


def names_train_op(a: A.Analysis, expr) -> bool:
    """``expr`` is a string naming a train op by its graph name."""
    if not isinstance(expr, cst.SimpleString):
        return False
    try:
        value = str(ast.literal_eval(expr.value))
    except (ValueError, SyntaxError):
        return False
    return value.split(":")[0] in train_op_strings(a)


def _holds_train_op(a: A.Analysis, expr, depth: int = 0) -> bool:
    """A fetch that is (or lists) a train op held in an attribute of a
    user object (``self.optimizer = opt.minimize(cost)``, run in a method),
    or named by the graph name it was given (``sess.run("train")``)."""
    if depth > 4:
        return False
    if names_train_op(a, expr):
        return True
    if isinstance(expr, (cst.List, cst.Tuple)):
        return any(_holds_train_op(a, e.value, depth + 1) for e in expr.elements)

    if isinstance(expr, cst.Attribute):
        for cd in a.instance_classes(expr.value):
            for value in a.attribute_values(cd, expr.attr.value):
                if isinstance(value, cst.Call) and method_name(value) in ("minimize", "apply_gradients"):
                    return True
    return False


def runs_train_op(a: A.Analysis, node, train_ops: Set[str]) -> bool:
    return bool(train_runs(a, node, train_ops))


def feeds(call: cst.Call, train_ops: Set[str]) -> bool:
    """The run call feeds data through feed_dict."""
    if find_arg(call, "feed_dict") is not None:
        return True
    recv = receiver(call)
    op_run = (isinstance(recv, cst.Name) and recv.value in train_ops) or (
        isinstance(recv, cst.Call) and method_name(recv) == "minimize")
    # sess.run(fetches, feed_dict) / train_op.run(feed_dict)
    return len(positional(call)) >= (1 if op_run else 2)


def should_stop_loop(loop: cst.While) -> bool:
    test = loop.test
    return (isinstance(test, cst.UnaryOperation) and isinstance(test.operator, cst.Not)
            and isinstance(test.expression, cst.Call) and method_name(test.expression) == "should_stop")


def until_out_of_range(a: A.Analysis, loop: cst.While) -> bool:
    """``while True:`` ended by tf.errors.OutOfRangeError (the data runs out),
    caught in the loop or by the nearest ``try`` around it."""
    if not (isinstance(loop.test, cst.Name) and loop.test.value == "True"):
        return False
    handlers = [n for n in walk(loop) if isinstance(n, cst.ExceptHandler)]
    around = next((t for t in a.ancestors(loop) if isinstance(t, (cst.Try, cst.FunctionDef))), None)
    if isinstance(around, cst.Try) and dataflow.is_inside(a, loop, around.body):
        handlers += list(around.handlers)
    return any(n.type is not None and "OutOfRangeError" in a.code(n.type) for n in handlers)


def runs_train_op_through_calls(a: A.Analysis, node, runs: List[cst.Call]) -> bool:
    """node runs the train op (one of the module's train-op ``runs``),
    directly or through the functions it calls."""
    return dataflow.reaches(a, node, lambda n: any(dataflow.is_inside(a, r, n) for r in runs))


def _feed_dict_node(a: A.Analysis, run: cst.Call, train_ops: Set[str]) -> Optional[cst.BaseExpression]:
    arg = find_arg(run, "feed_dict")
    if arg is None:
        pos = positional(run)
        recv = receiver(run)
        op_run = (isinstance(recv, cst.Name) and recv.value in train_ops) or isinstance(recv, cst.Call)
        index = 0 if op_run else 1
        arg = pos[index] if index < len(pos) else None
    return arg.value if arg is not None else None


def feed_values(a: A.Analysis, run: cst.Call, train_ops: Set[str]) -> Optional[List[cst.BaseExpression]]:
    """The values of the feed_dict of a run call (a dict literal, maybe through one name)."""
    value = _feed_dict_node(a, run, train_ops)
    if value is None:
        return None
    if isinstance(value, cst.Name):
        bound = a.assigned_values(value)
        value = bound[0][1] if len(bound) == 1 else None
    if not isinstance(value, cst.Dict) or any(not isinstance(e, cst.DictElement) for e in value.elements):
        return None
    return [e.value for e in value.elements]


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
        if first is not None and name is not None and dataset_flow.keeps_rows(value, name):
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


def rows_under(a: A.Analysis, value):
    """``value`` with every row-keeping conversion around it peeled off
    (row_kept_source, repeatedly): ``x[i:j]`` in
    ``tf.convert_to_tensor(x[i:j].astype(...))``."""
    inner = row_kept_source(a, value) if value is not None else None
    while inner is not None:
        value, inner = inner, row_kept_source(a, inner)
    return value


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


def shuffled_with(a: A.Analysis, origin) -> List[str]:
    """The names a joint shuffle binding ``origin`` reorders together
    (``X, Y = shuffle(X, Y)``: X and Y); [] for anything else."""
    statement = next((p for p in [origin, *a.ancestors(origin)] if isinstance(p, cst.Assign)), None)
    if statement is None or not isinstance(statement.value, cst.Call) \
            or not a.is_name(statement.value, apis.JOINT_ROW_SHUFFLES):
        return []
    return [arg.value.value for arg in statement.value.args if isinstance(arg.value, cst.Name) and not arg.keyword]


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


def full_size_uses(a: A.Analysis, block_body, first, point, roots: Set[str]) -> List[Tuple[str, int, cst.Name]]:
    """Counts of the rows of the fed arrays (and names computed from such
    counts) bound between the first binding of the arrays and the slicing
    point (so from the full data), read after the slicing point other than
    as a loop's step count: (name, line bound, use). Other values taken from
    the full data -- a vocabulary, a number of classes, a longest sequence --
    are meant to be the same on every rank (they shape the model)."""
    out = []
    body = list(block_body)
    if point is None:
        return out  # sliced at the entry: nothing is computed before
    sizes: Set[str] = set()
    for stmt in body[body.index(first):body.index(point)]:
        value = dataflow.value_of_statement(stmt) if isinstance(stmt, cst.SimpleStatementLine) else None
        if value is None or not (_size_of(a, value, roots) or any(n.value in sizes for n in dataflow.names_in(value))):
            continue
        small = stmt.body[0]
        targets = [t.target for t in small.targets] if isinstance(small, cst.Assign) else [small.target]
        for target in targets:
            for name in walk(target):
                if not isinstance(name, cst.Name) or name.value in roots:
                    continue
                sizes.add(name.value)
                for use in a.scopes.references(name):
                    if dataflow.after(a, use, point) and not _in_step_count(a, use):
                        out.append((name.value, a.line(stmt), use))
    return out


def _size_of(a: A.Analysis, expr, roots: Set[str]) -> bool:
    """expr measures one of roots: ``len(x)``, ``x.shape[...]``, ``x.size``."""
    for n in walk(expr):
        if isinstance(n, cst.Call) and a.is_name(n, {"builtins.len"}) and n.args and isinstance(n.args[0].value, cst.Name) \
                and n.args[0].value.value in roots:
            return True
        if isinstance(n, cst.Attribute) and n.attr.value in ("shape", "size") and isinstance(n.value, cst.Name) \
                and n.value.value in roots and not _feature_axes(a, n):
            return True
    return False


def _feature_axes(a: A.Analysis, shape: cst.Attribute) -> bool:
    """``x.shape[1]``, ``x.shape[2:]``: axes after the rows, the same
    whatever rows a rank holds (a number of classes, an image size)."""
    sub = a.parent(shape)
    if shape.attr.value != "shape" or not isinstance(sub, cst.Subscript) or sub.value is not shape \
            or len(sub.slice) != 1:
        return False
    index = sub.slice[0].slice
    if isinstance(index, cst.Index):
        return isinstance(index.value, cst.Integer) and int(index.value.value, 0) >= 1
    return isinstance(index, cst.Slice) and isinstance(index.lower, cst.Integer) and int(index.lower.value, 0) >= 1


def per_rank_sizes_in_graph(a: A.Analysis, block_body, point, roots: Set[str]) -> List[Tuple[str, int, cst.Name]]:
    """Names bound after the slicing point to a size of the sliced arrays and
    read in a statement that builds a TensorFlow expression (a loss
    normaliser, say) rather than counting steps: per-rank now, which may not
    be what the user meant."""
    out = []
    body = list(block_body)
    for stmt in body[body.index(point) + 1 if point is not None else 0:]:
        value = dataflow.value_of_statement(stmt) if isinstance(stmt, cst.SimpleStatementLine) else None
        if value is None or not _size_of(a, value, roots):
            continue
        if isinstance(value, cst.Call) and a.is_name(value, apis.TF_SHAPE_ARGUMENTS):
            continue  # tf_x = tf.placeholder(tf.float32, x.shape): a tensor shaped like the rank's data, not a count
        small = stmt.body[0]
        targets = [t.target for t in small.targets] if isinstance(small, cst.Assign) else [small.target]
        for target in targets:
            if not isinstance(target, cst.Name):
                continue
            for use in a.scopes.references(target):
                use_stmt = a.statement_of(use)
                if use_stmt is None or _in_step_count(a, use) or _in_shape(a, use):
                    continue
                if any(isinstance(c, cst.Call) and any(q.startswith("tensorflow.") for q in a.names(c))
                       for c in walk(use_stmt)):
                    out.append((target.value, a.line(stmt), use))
                    break
    return out


def _in_shape(a: A.Analysis, node) -> bool:
    """node is (part of) the shape a TensorFlow function or an RNN cell's
    zero_state() is given: the batch a tensor holds, per rank like the
    batch fed (apis.TF_SHAPE_ARGUMENTS, apis.TF_SHAPE_METHODS)."""
    for anc in a.ancestors(node):
        if isinstance(anc, cst.Arg):
            call = a.parent(anc)
            if not isinstance(call, cst.Call):
                return False
            name = a.is_name(call, apis.TF_SHAPE_ARGUMENTS)
            spec = apis.TF_SHAPE_ARGUMENTS[name] if name is not None else apis.TF_SHAPE_METHODS.get(method_name(call))
            return spec is not None and find_arg(call, spec[0], spec[1]) is anc
        if isinstance(anc, cst.BaseStatement):
            return False
    return False


def _in_step_count(a: A.Analysis, node) -> bool:
    """node is part of a loop's step count (range(...) arguments, a while test, a break test)."""
    for anc in a.ancestors(node):
        if isinstance(anc, cst.Call) and a.is_name(anc, apis.RANGE_FUNCTIONS):
            return True
        if isinstance(anc, cst.While) or isinstance(anc, cst.If):
            return node is not None and any(x is anc.test for x in [node, *a.ancestors(node)])
        if isinstance(anc, cst.BaseStatement):
            return False
    return False


@dataclass
class SlicePoint:
    roots: Dict[str, cst.Name]
    bindings: Dict[str, List[cst.BaseStatement]]  # the statements binding each (not its parameter)
    every: List[cst.BaseStatement]
    body: List[cst.BaseStatement]  # the block they are bound in
    first: cst.BaseStatement  # the first binding (or the function's first statement)
    point: Optional[cst.BaseStatement]  # the last binding; None: at the function's entry
    entry: Optional[cst.BaseStatement]  # the function's first statement, for parameters
    function: Optional[cst.FunctionDef]

    @property
    def where(self):
        return self.point if self.point is not None else self.function.params


def lifted_to_common_block(a: A.Analysis, stmts: List[cst.BaseStatement], entry_block) -> List[cst.BaseStatement]:
    """Each statement replaced by the statement holding it in the innermost
    block holding them all (and ``entry_block``, a function's body when its
    parameters are among the bindings); unchanged when there is no such
    block within the same function."""
    def chain(stmt):  # (block, the statement in it) from the statement's own block outwards
        out = []
        while stmt is not None:
            block = a.parent(stmt)
            out.append((block, stmt))
            holder = next((x for x in a.ancestors(block) if isinstance(x, cst.BaseStatement)), None)
            if holder is None or isinstance(holder, (cst.FunctionDef, cst.ClassDef)):
                break
            stmt = holder
        return out
    if not stmts:
        return stmts
    chains = [chain(s) for s in stmts]
    common = [b for b, _ in chains[0] if all(any(b is c for c, _ in ch) for ch in chains[1:])]
    if entry_block is not None:
        common = [b for b in common if b is entry_block]
    if not common:
        return stmts
    block = common[0]
    lifted: List[cst.BaseStatement] = []
    for ch in chains:
        holder = next(s for b, s in ch if b is block)
        if all(holder is not x for x in lifted):
            lifted.append(holder)
    return lifted


def changed_in_place(a: A.Analysis, node: cst.Name, stmts: List[cst.BaseStatement]) -> Optional[List[cst.BaseStatement]]:
    """The statements, in the block binding the array, that change it in
    place after it is bound (``dataX.append(x)`` in the loop filling it,
    ``rows[i] = r``): the loop or statement holding each change. None when a
    change is elsewhere (another function, another block)."""
    block = a.parent(stmts[0]) if stmts else None
    targets = [t for s in stmts for t in walk(s) if isinstance(t, cst.Name) and t.value == node.value
               and isinstance(a.parent(t), (cst.AssignTarget, cst.Element, cst.AnnAssign))]
    out: List[cst.BaseStatement] = []
    for use in [u for t in targets for u in a.scopes.references(t)]:
        par = a.parent(use)
        mutated = (isinstance(par, cst.Attribute) and par.value is use and par.attr.value in apis.CONTAINER_MUTATORS
                   and isinstance(a.parent(par), cst.Call) and a.parent(par).func is par) \
            or (isinstance(par, cst.Subscript) and par.value is use and isinstance(a.parent(par), cst.AssignTarget))
        if not mutated:
            continue
        stmt = a.statement_of(use)
        while stmt is not None and a.parent(stmt) is not block:
            stmt = a.statement_of(a.parent(stmt)) if a.parent(stmt) is not None else None
        if stmt is None:
            return None
        if stmt not in out:
            out.append(stmt)
    return out


def is_docstring(stmt) -> bool:
    return isinstance(stmt, cst.SimpleStatementLine) and len(stmt.body) == 1 and isinstance(stmt.body[0], cst.Expr) \
        and isinstance(stmt.body[0].value, (cst.SimpleString, cst.ConcatenatedString))


def bound_names(a: A.Analysis, call: cst.Call) -> Set[str]:
    """The names ``call``'s result is bound to (``op1`` in ``op1 = opt.minimize(loss1)``)."""
    for anc in a.ancestors(call):
        if isinstance(anc, cst.Assign):
            return {n.value for t in anc.targets for n in walk(t.target) if isinstance(n, cst.Name)}
        if isinstance(anc, cst.BaseStatement):
            break
    return set()


def argument_values(a: A.Analysis, expr) -> List[cst.BaseExpression]:
    """expr, or what the calls pass for it when it is a parameter
    (``minimize(loss_value)`` in ``def train_step(loss_value)``)."""
    if isinstance(expr, cst.Name):
        params = [origin for origin, _ in a.assigned_values(expr) if isinstance(origin, cst.Param)]
        if params:
            return [v for p in params for v in a.parameter_values(p)] or [expr]
    return [expr]


def shuffle_off(call: cst.Call) -> bool:
    arg = find_arg(call, "shuffle")
    return arg is not None and isinstance(arg.value, cst.Name) and arg.value.value == "False"


def returned_by_callers(a: A.Analysis, queues: List[cst.Call], batches: Set[str]) -> Set[str]:
    """Names bound from calls of the functions that build the queues and
    return their batches (``X, Y = read_images(path)``), through up to three
    levels of such functions."""
    out: Set[str] = set()
    functions = {a.enclosing_function(q) for q in queues} - {None}
    for _ in range(3):
        returning = [f for f in functions if any(
            isinstance(r, cst.Return) and r.value is not None and dataflow.depends_on(a, r.value, batches | out)
            for r in walk(f.body))]
        calls = [c for c in a.calls if isinstance(c.func, cst.Name) and any(c.func.value == f.name.value for f in returning)]
        grown = {n for c in calls for n in bound_names(a, c)} - out - batches
        if not grown:
            break
        out |= grown
        functions = {a.enclosing_function(c) for c in calls} - {None}
    return out


def whole_feeds(a: A.Analysis, fed: List[cst.Call], train_ops: Set[str]) -> List[cst.BaseExpression]:
    """Fed values that are a whole array (or literal list) bound outside the step loop."""
    out = []
    for run in fed:
        loop = dataflow.outermost_loop(a, run)
        for v in feed_values(a, run, train_ops) or ():
            if isinstance(v, (cst.List, cst.Tuple)) and not is_constant(a, v):
                out.append(v)
            elif isinstance(v, cst.Name) and not is_constant(a, v) and loop is not None:
                bound = a.assigned_values(v)
                if bound and not any(dataflow.is_inside(a, o, loop) or isinstance(o, cst.Param) for o, _ in bound):
                    out.append(v)
    return out


def full_batch_feeds(ctx) -> Optional[Tuple[Dict[str, cst.Name], List[cst.CSTNode]]]:
    """(arrays, the runs feeding them) when every non-constant value fed to
    the train op is a whole array bound before the step loop, the same at
    every step -- full-batch training; None otherwise. Computed once per file."""
    cache = ctx.state("tf1_common.full_batch", dict)
    if "value" in cache:
        return cache["value"]
    a = ctx.a
    cache["value"] = None
    train_ops = train_op_names(a)
    runs = train_runs(a, a.module, train_ops)
    fed = [r for r in runs if feeds(r, train_ops)]
    roots: Dict[str, cst.Name] = {}
    if not fed:
        found = _in_graph_data(a) if runs else None
        if found:
            cache["value"] = found
        return cache["value"]
    for run in fed:
        loop = dataflow.outermost_loop(a, run)
        values = feed_values(a, run, train_ops)
        if loop is None or values is None:
            return None
        for v in values:
            if is_constant(a, v):
                continue
            if not isinstance(v, cst.Name):
                return None
            bound = a.assigned_values(v)
            if not bound or any(dataflow.is_inside(a, o, loop) or isinstance(o, cst.Param) for o, _ in bound):
                return None
            roots.setdefault(v.value, v)
    if roots:
        cache["value"] = (roots, fed)
    return cache["value"]


_SAMPLE_ARRAYS = {"numpy.array", "numpy.asarray", "numpy.loadtxt", "numpy.genfromtxt"}


def _literal_length(a: A.Analysis, value) -> Optional[int]:
    """Rows of a data literal: a list/tuple of numbers or of such lists, or a
    list comprehension (-1: known at run time), directly or through
    np.array(...); None for anything else."""
    if isinstance(value, cst.Call) and a.is_name(value, _SAMPLE_ARRAYS) and value.args:
        if a.is_name(value, {"numpy.loadtxt", "numpy.genfromtxt"}):
            return -1  # rows known only at run time
        value = value.args[0].value
    if isinstance(value, cst.ListComp):
        return -1  # x_data = [v[0] for v in points]: one row per element, known at run time
    if not isinstance(value, (cst.List, cst.Tuple)) or len(value.elements) < 2:
        return None
    for e in value.elements:
        v = e.value
        if isinstance(v, cst.UnaryOperation):
            v = v.expression
        if isinstance(v, (cst.List, cst.Tuple)):
            if not all(isinstance(x.value, (cst.Integer, cst.Float, cst.UnaryOperation)) for x in v.elements):
                return None
        elif not isinstance(v, (cst.Integer, cst.Float)):
            return None
    return len(value.elements)


def _in_graph_data(a: A.Analysis) -> Optional[Tuple[Dict[str, cst.Name], List[cst.CSTNode]]]:
    """Samples written into the graph itself (``X = [1, 2, 3]``, ``hypothesis
    = X * W``): full-batch training with no feed. Only literal sample arrays
    used as direct operands of the expressions the loss is built from count
    (never a shape, never through a subscript), all of one length."""
    losses = [c for c in optimizer_loss_calls(a)]
    if not losses:
        return None
    roots: Dict[str, cst.Name] = {}
    lengths = set()
    for assign in a.assigns:
        if len(assign.targets) != 1 or not isinstance(assign.targets[0].target, cst.Name):
            continue
        length = _literal_length(a, assign.value)
        if length is None:
            continue
        target = assign.targets[0].target
        uses = a.scopes.references(target)
        operand_uses = [u for u in uses if isinstance(a.parent(u), cst.BinaryOperation)]
        if not operand_uses:
            continue
        if not any(dataflow.depends_on(a, loss.args[0].value, {target.value}) for loss in losses if loss.args):
            continue
        if any(isinstance(a.parent(u), cst.Subscript) or isinstance(a.parent(u), cst.Element) for u in uses):
            return None  # also used as a shape or indexed: not plainly samples
        roots.setdefault(target.value, target)
        lengths.add(length)
    if not roots or len(lengths - {-1}) > 1:
        return None
    return roots, losses


def optimizer_loss_calls(a: A.Analysis) -> List[cst.Call]:
    """``opt.minimize(loss)`` / ``opt.compute_gradients(loss)`` on TF1 optimizers."""
    return [c for c in a.calls if method_name(c) in ("minimize", "compute_gradients")
            and a.is_kind(receiver(c), A.TF1_OPTIMIZER)]
