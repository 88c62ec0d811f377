"""TF1 training ops: which names hold a train op, which ``sess.run`` calls run it, and where
the variables are initialised for training.
"""
from __future__ import annotations

import ast
from typing import List, Set
import libcst as cst
from ..engine.memo import fact
from ..engine import analysis as A
from ..engine import dataflow
from ..engine.scopes import walk
from .syntax import calls_in, find_arg, mentions, method_name, receiver


# TF1 parameter-server distribution: such a script is distributed already.
PS_DISTRIBUTION = {
    "tensorflow.train.ClusterSpec",
    "tensorflow.train.Server",
    "tensorflow.train.replica_device_setter",
    "tensorflow.train.SyncReplicasOptimizer",
}
CHIEF_SESSION_CREATOR = "tensorflow.train.ChiefSessionCreator"
GPU_OPTIONS = "tensorflow.GPUOptions"

# Hooks that write files: they run on rank 0 only.
FILE_WRITING_HOOKS = {
    "tensorflow.train.CheckpointSaverHook",
    "tensorflow.train.SummarySaverHook",
    "tensorflow.train.ProfilerHook",
}


@fact
def optimizer_calls(a: A.Analysis) -> List[cst.Call]:
    return [c for c in a.calls if any(t.kind == A.TF1_OPTIMIZER and t.call is c for t in a.types(c))]


@fact
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


@fact
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


@fact
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


@fact
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


@fact
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


@fact
def runs_train_op(a: A.Analysis, node, train_ops: Set[str]) -> bool:
    return bool(train_runs(a, node, train_ops))


def should_stop_loop(loop: cst.While) -> bool:
    test = loop.test
    return (isinstance(test, cst.UnaryOperation) and isinstance(test.operator, cst.Not)
            and isinstance(test.expression, cst.Call) and method_name(test.expression) == "should_stop")


@fact
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


@fact
def runs_train_op_through_calls(a: A.Analysis, node, runs: List[cst.Call]) -> bool:
    """node runs the train op (one of the module's train-op ``runs``),
    directly or through the functions it calls."""
    return dataflow.reaches(a, node, lambda n: any(dataflow.is_inside(a, r, n) for r in runs))
