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
from . import data_division, dataset_flow, lr_scaling, samplers, step_loops, warmup
from .common import (append_arg, calls_in, find_arg, has_star_args, kwarg, mentions, method_name, names_a_field,
                     positional, receiver)

# TF1 parameter-server distribution: such a script is distributed already.
PS_DISTRIBUTION = {
    "tensorflow.train.ClusterSpec",
    "tensorflow.train.Server",
    "tensorflow.train.replica_device_setter",
    "tensorflow.train.SyncReplicasOptimizer",
}
CHIEF_SESSION_CREATOR = "tensorflow.train.ChiefSessionCreator"
GPU_OPTIONS = "tensorflow.GPUOptions"


def _pinned(ctx) -> set:
    """Session configs already given a GPU per process (per conversion)."""
    return ctx.state(__name__ + ".pinned")


# Hooks that write files: they run on rank 0 only.
FILE_WRITING_HOOKS = {
    "tensorflow.train.CheckpointSaverHook",
    "tensorflow.train.SummarySaverHook",
    "tensorflow.train.ProfilerHook",
}


def optimizer_calls(a: A.Analysis) -> List[cst.Call]:
    return [c for c in a.calls if any(t.kind == A.TF1_OPTIMIZER and t.call is c for t in a.types(c))]


def check_convertible(ctx) -> None:
    """Refuse what the TF1 recipe cannot convert safely."""
    a = ctx.a
    for c in a.calls:
        if a.is_name(c, PS_DISTRIBUTION):
            raise ctx.unsupported(c, f"{a.code(c.func)}: this script is already distributed with TF1 parameter "
                                     "servers; tfdist converts single-process scripts only")
    # DistributedOptimizer averages gradients in compute_gradients() (which
    # minimize() calls): gradients from tf.gradients() given straight to
    # apply_gradients() would not be averaged and the ranks would drift apart.
    applies = [c for c in a.calls if method_name(c) == "apply_gradients" and a.is_kind(receiver(c), A.TF1_OPTIMIZER)]
    computes = [c for c in a.calls if method_name(c) == "compute_gradients" and a.is_kind(receiver(c), A.TF1_OPTIMIZER)]
    if applies and not computes:
        raise ctx.unsupported(applies[0], ctx.say("apply_gradients() with gradients not computed by the optimizer's "
                                                  "compute_gradients(): {optimizer_wrapper} would not average them "
                                                  "(use optimizer.compute_gradients or minimize)"))


def wrap_optimizers(ctx) -> None:
    """DistributedOptimizer around every TF1 optimizer; its learning rate
    scaled with the global batch -- unless every step trains on the whole
    data set (full-batch): the global batch is then the original one, and
    the rate stays as the user set it."""
    a = ctx.a
    full_batch = full_batch_feeds(ctx) is not None
    for call in optimizer_calls(a):
        name = next(t.name for t in a.types(call) if t.kind == A.TF1_OPTIMIZER)
        if full_batch:
            ctx.change(call, lr_scaling.RULE, "learning rate kept: every step still trains on the whole data set "
                                              "(full-batch), split between the ranks, so the global batch is unchanged")
        elif lr_scaling.scale_optimizer_lr(ctx, call, name):
            warmup.warm_up_tf1_optimizer(ctx, call)
        else:
            warmup.not_warmed_up(ctx, call)
        template = ctx.backend.wrap_optimizer("{inner}", keras=False)
        ctx.plan.replace(call, lambda upd, t=template: ctx.expr(t, inner=ctx.module.code_for_node(upd)))
        ctx.change(call, "distributed-optimizer", ctx.say("{optimizer} wrapped in {optimizer_wrapper} (gradients averaged across ranks)", optimizer=a.code(call.func)))


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


def pin_config(ctx, call: cst.Call, position) -> None:
    """Pass a ConfigProto that makes only this rank's GPU visible."""
    a = ctx.a
    arg = find_arg(call, "config", position)
    tf1 = tf1_prefix(ctx, call)
    if arg is None:
        new = ctx.expr(ctx.backend.tf1_device_config(tf1))
        ctx.plan.replace(call, lambda c: add_kwarg(c, kwarg("config", new)))
        ctx.change(call, "gpu-pinning", "session config pins one GPU per process (by local rank)")
        return
    value = arg.value
    target = value
    if isinstance(value, cst.Name):
        bound = a.assigned_values(value)
        if len(bound) == 1 and isinstance(bound[0][1], cst.Call) and a.is_kind(bound[0][1], A.CONFIG_PROTO):
            stmt = a.statement_of(bound[0][0])
            if stmt is not None and stmt not in _pinned(ctx):
                _pinned(ctx).add(stmt)
                line = f"{value.value}.gpu_options.visible_device_list = {ctx.backend.tf1_visible_device_list()}"
                ctx.plan.insert_after(stmt, ctx.stmts(line, comment=ctx.say("{engine}: pin one GPU per process.")))
                ctx.change(stmt, "gpu-pinning", f"{value.value} pins one GPU per process (by local rank)")
            return
    if isinstance(target, cst.Call) and a.is_kind(target, A.CONFIG_PROTO):
        gpu = find_arg(target, "gpu_options")
        if gpu is None:
            if target not in _pinned(ctx):
                _pinned(ctx).add(target)
                new_arg = kwarg("gpu_options", ctx.expr(f"{tf1}.GPUOptions(visible_device_list={ctx.backend.tf1_visible_device_list()})"))
                ctx.plan.replace(target, lambda c: add_kwarg(c, new_arg))
                ctx.change(target, "gpu-pinning", "session config pins one GPU per process (by local rank)")
            return
        options = gpu.value
        if (isinstance(options, cst.Call) and a.is_name(options, {GPU_OPTIONS})
                and find_arg(options, "visible_device_list") is None and not any(x.star for x in options.args)):
            if options not in _pinned(ctx):
                _pinned(ctx).add(options)
                new_arg = kwarg("visible_device_list", ctx.expr(ctx.backend.tf1_visible_device_list()))
                ctx.plan.replace(options, lambda c: add_kwarg(c, new_arg))
                ctx.change(options, "gpu-pinning", "session config pins one GPU per process (by local rank)")
            return
    ctx.warn(value, "gpu-pinning", ctx.say("set config.gpu_options.visible_device_list = str({local_rank}) on this config by hand"))


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


def shard_input(ctx) -> bool:
    """Shard the datasets turned into iterators, and those a reinitializable
    iterator is initialised with right before training. True if any was."""
    a = ctx.a
    found = False
    datasets = []
    for c in a.calls:
        if a.is_name(c, apis.DATASET_ITERATOR_FUNCTIONS) and c.args:
            datasets.append(c.args[0].value)
        elif method_name(c) in ("make_one_shot_iterator", "make_initializable_iterator") and a.is_kind(receiver(c), A.DATASET):
            datasets.append(receiver(c))
    datasets += _initialized_for_training(a)
    for ds in datasets:
        if data_division.shard_dataset(ctx, ds, "input pipeline"):
            found = True
    return found


def _initialized_for_training(a: A.Analysis) -> List[cst.BaseExpression]:
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
        if any(_runs_train_op_through_calls(a, later, runs) for later in body[body.index(stmt) + 1:]):
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


def _should_stop_loop(loop: cst.While) -> bool:
    test = loop.test
    return (isinstance(test, cst.UnaryOperation) and isinstance(test.operator, cst.Not)
            and isinstance(test.expression, cst.Call) and method_name(test.expression) == "should_stop")


def _until_out_of_range(a: A.Analysis, loop: cst.While) -> bool:
    """``while True:`` ended by tf.errors.OutOfRangeError (the data runs out),
    caught in the loop or by the nearest ``try`` around it."""
    if not (isinstance(loop.test, cst.Name) and loop.test.value == "True"):
        return False
    handlers = [n for n in walk(loop) if isinstance(n, cst.ExceptHandler)]
    around = next((t for t in a.ancestors(loop) if isinstance(t, (cst.Try, cst.FunctionDef))), None)
    if isinstance(around, cst.Try) and dataflow.is_inside(a, loop, around.body):
        handlers += list(around.handlers)
    return any(n.type is not None and "OutOfRangeError" in a.code(n.type) for n in handlers)


def _runs_train_op_through_calls(a: A.Analysis, node, runs: List[cst.Call]) -> bool:
    """node runs the train op (one of the module's train-op ``runs``),
    directly or through the functions it calls."""
    return dataflow.reaches(a, node, lambda n: any(dataflow.is_inside(a, r, n) for r in runs))


def divide_step_loops(ctx, sharded: bool, sliced=None) -> List[cst.Call]:
    """Divide the innermost loop running the train op: each rank runs 1/size of the steps.

    A ``while`` loop that stops on its own (``should_stop()``, or the end of
    a sharded tf.data input) is left alone, and so is a count computed from
    arrays already divided (``sliced``). The train op may be run by a
    function the loop calls. Returns the train-op runs.
    """
    a = ctx.a
    train_ops = train_op_names(a)
    loops = sorted(a.for_loops + a.while_loops, key=lambda n: (a.line(n), a.col(n)))
    all_runs = train_runs(a, a.module, train_ops)  # found once; loops are matched by ancestry
    training = [l for l in loops if _runs_train_op_through_calls(a, l.body, all_runs)]
    innermost = [l for l in training
                 if not any(o is not l and any(x is l for x in a.ancestors(o)) for o in training)]
    # A loop whose body only calls a function holding the real step loop is an epoch loop.
    innermost = [l for l in innermost if not any(
        o is not l and dataflow.reaches(a, l.body, lambda n, o=o: n is o or any(x is n for x in a.ancestors(o)))
        for o in innermost)]
    for loop in innermost:
        if isinstance(loop, cst.While) and (_should_stop_loop(loop) or (sharded and _until_out_of_range(a, loop))):
            continue
        spots = [v for r in all_runs if dataflow.is_inside(a, r, loop) for v in _feed_values(a, r, train_ops) or ()]
        spots += [arg for c in calls_in(loop.body) if _runs_train_op_through_calls(a, c, all_runs) for arg in c.args]
        outcome = step_loops.divide(ctx, loop, "training steps", _sliced_for(a, loop, sliced), spots)
        if outcome == step_loops.DIVIDED and step_loops.stream_of_steps(a, loop, spots) is not None:
            ctx.state(__name__ + ".streams", list).append(loop)
        if outcome == step_loops.UNKNOWN:
            ctx.warn(loop, data_division.RULE, ctx.say("cannot see how many steps this training loop runs: make each rank "
                                                       "run 1/size of its steps (e.g. divide its step count by {size})"))
    if all_runs and not training:
        ctx.warn(all_runs[0], data_division.RULE, "training loop not found: make each rank run 1/size of the training steps")
    return all_runs


def _sliced_for(a: A.Analysis, loop, sliced) -> Optional[step_loops.Sliced]:
    """Of the arrays sliced (one Sliced, or one per function binding
    some), those the loop's count may be computed from: sliced in the
    loop's function, or the only ones."""
    if sliced is None or isinstance(sliced, step_loops.Sliced):
        return sliced
    if len(sliced) == 1:
        return sliced[0]
    return next((s for s in sliced if a.enclosing_function(s.point) is a.enclosing_function(loop)), None)


def _feed_dict_node(a: A.Analysis, run: cst.Call, train_ops: Set[str]) -> Optional[cst.BaseExpression]:
    arg = find_arg(run, "feed_dict")
    if arg is None:
        pos = positional(run)
        recv = receiver(run)
        op_run = (isinstance(recv, cst.Name) and recv.value in train_ops) or isinstance(recv, cst.Call)
        index = 0 if op_run else 1
        arg = pos[index] if index < len(pos) else None
    return arg.value if arg is not None else None


def _feed_values(a: A.Analysis, run: cst.Call, train_ops: Set[str]) -> Optional[List[cst.BaseExpression]]:
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


def _is_constant(a: A.Analysis, expr, depth: int = 0) -> bool:
    """A literal (``0.5``, ``True``), or a name only ever bound to literals:
    a hyper-parameter fed each step (dropout keep probability, a training
    flag), not data."""
    if isinstance(expr, (cst.Integer, cst.Float, cst.SimpleString)):
        return True
    if isinstance(expr, cst.UnaryOperation):
        return _is_constant(a, expr.expression, depth)
    if isinstance(expr, cst.BinaryOperation):
        return _is_constant(a, expr.left, depth) and _is_constant(a, expr.right, depth)
    if isinstance(expr, cst.Call) and a.is_name(expr, apis.NUMPY_CONSTANT_ARRAYS):
        # np.ones([batch_size]), np.concatenate([np.ones(...), np.zeros(...)], axis=0):
        # the shapes and parts given are literals, sizes or such arrays
        return all(_is_constant(a, arg.value, depth) or _is_shape(a, arg.value, depth) for arg in expr.args)
    if isinstance(expr, cst.Name):
        if expr.value in ("True", "False", "None"):
            return True
        bound = a.assigned_values(expr)
        if depth >= 4 or not bound:
            return False
        for origin, value in bound:
            if isinstance(origin, cst.Param):
                # a parameter: constant if its default and everything passed to it are
                if origin.default is not None and not _is_constant(a, origin.default, depth + 1):
                    return False
                passed = a.argument_values(origin)
                if (origin.default is None and not passed) or not all(_is_constant(a, arg, depth + 1) for _, arg in passed):
                    return False
            elif value is None or not _is_constant(a, value, depth + 1):
                return False
        return True
    return False


def _rows_reshaped(value) -> bool:
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
    rows = [arg.value for arg in call.args if not _is_constant(a, arg.value)]
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


def _array_roots(a: A.Analysis, expr, loop, out: Dict[str, cst.Name], readers: List[cst.CSTNode],
                 reader: cst.CSTNode, depth: int = 0) -> bool:
    """Collect the arrays bound outside the training loop that a fed value
    reads rows of: ``data`` in ``data[off:off + B]``, in ``xb`` with
    ``xb = data[idx]`` bound in the loop, in ``x`` of ``for x, y in
    zip(data, labels)``; a function parameter is followed to the arguments
    of the function's one call site (which then reads the arrays). False if
    the value is anything else (a sampler call, a computation tfdist cannot
    follow)."""
    if depth > 6:
        return False
    if isinstance(expr, (cst.List, cst.Tuple)) and expr.elements \
            and not any(isinstance(e, cst.StarredElement) for e in expr.elements):
        # {X: [x]}: a batch of the rows listed (x one sample of the loop's
        # rows); a whole array listed is still refused below (depth kept)
        return all(_array_roots(a, e.value, loop, out, readers, reader, depth) for e in expr.elements)
    while isinstance(expr, cst.Call) and method_name(expr) in apis.ROW_PRESERVING_METHODS \
            and isinstance(receiver(expr), cst.Subscript):
        expr = receiver(expr)  # x[idx].reshape(b, n): still rows of x
    rows = isinstance(expr, cst.Subscript)
    while isinstance(expr, cst.Subscript):
        expr = expr.value
    if not isinstance(expr, cst.Name):
        return False
    bound = a.assigned_values(expr)
    if not bound:
        return False
    if len(bound) == 1 and isinstance(bound[0][0], cst.Name):
        iterated = loop_row_source(a, bound[0][0])
        if iterated is not None:
            return _array_roots(a, iterated, loop, out, readers, reader, depth + 1)
    # X, Y = shuffle(X, Y) each epoch: the same rows again, so X is still the
    # array bound before the loop (and is divided there)
    reorders = [o for o, _ in bound if dataflow.is_inside(a, o, loop) and reorders_itself(a, o, expr.value)]
    if reorders and depth == 0 and not rows:
        return False  # the whole array, every step
    bound = [(o, v) for o, v in bound if all(o is not r for r in reorders)]
    inside = [(o, v if v is not None or not isinstance(o, cst.Name) else dataflow.element_value(a, o))
              for o, v in bound if dataflow.is_inside(a, o, loop)]
    if depth == 0 and not rows and not inside and not (len(bound) == 1 and isinstance(bound[0][0], cst.Param)):
        return False  # the whole array, every step: not rows of it (see _whole_feeds)
    if inside:
        if len(inside) != len(bound):
            return False
        helpers = [batch_helper_arrays(a, v if isinstance(v, cst.Call) else dataflow.assigned_by(a, o))
                   for o, v in inside]
        if all(h is not None for h in helpers):
            # bx, by = get_next_batch(X, Y, step): rows of X and Y
            return all(_array_roots(a, arg, loop, out, readers, reader, depth + 1) for h in helpers for arg in h)
        # xb = tf.convert_to_tensor(xb): still the rows xb holds; so is
        # noisy = xb + 0.3 * np.random.randn(*xb.shape) (a denoising input)
        inside = [(o, _rows_under_noise(a, v, loop) or v) for o, v in inside]
        # (every conversion peeled: xb = xb / 127.5 - 1.0 is still xb's rows)
        inside = [(o, (rows_under(a, v) if v is not None else None) or v) for o, v in inside]
        # yb = one_hot(get_batch(y, step)): a function of this module computing
        # from the rows it is given and nothing else
        inside = [(o, pure_batch_function_argument(a, v) or v) for o, v in inside]
        for _, v in inside:
            helper = batch_helper_arrays(a, v)
            if helper is not None:  # one_hot(get_batch(y, step)): the rows get_batch cuts from y
                if not all(_array_roots(a, arg, loop, out, readers, reader, depth + 1) for arg in helper):
                    return False
            elif not (v is not None and (isinstance(v, (cst.Subscript, cst.Name)) or _rows_reshaped(v))
                      and _array_roots(a, v, loop, out, readers, reader, depth + 1)):
                return False
        return True
    params = [o for o, _ in bound if isinstance(o, cst.Param)]
    # a parameter of the function holding the step loop is divided at the
    # function's entry (every caller's data alike); one of a function called
    # per step is followed to the arguments of its one call
    at_entry = bool(params) and all(a.enclosing_function(p) is a.enclosing_function(loop) for p in params)
    if len(bound) == 1 and params:
        calls = a.argument_values(params[0])
        if len(calls) == 1:
            call, arg = calls[0]
            found_out, found_readers = dict(out), list(readers)
            if _array_roots(a, arg, call, found_out, found_readers, call, depth + 1):
                out.update(found_out)
                readers[:] = found_readers
                return True
        if not at_entry:
            return False
    elif params and not at_entry:
        return False
    out.setdefault(expr.value, expr)
    if all(r is not reader for r in readers):
        readers.append(reader)
    return True


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


def _shuffled_with(a: A.Analysis, origin) -> List[str]:
    """The names a joint shuffle binding ``origin`` reorders together
    (``X, Y = shuffle(X, Y)``: X and Y); [] for anything else."""
    statement = next((p for p in [origin, *a.ancestors(origin)] if isinstance(p, cst.Assign)), None)
    if statement is None or not isinstance(statement.value, cst.Call) \
            or not a.is_name(statement.value, apis.JOINT_ROW_SHUFFLES):
        return []
    return [arg.value.value for arg in statement.value.args if isinstance(arg.value, cst.Name) and not arg.keyword]


def loop_row_source(a: A.Analysis, target: cst.Name) -> Optional[cst.BaseExpression]:
    """The array whose rows (or a column of whose rows) the for-loop target
    ``target`` holds at each iteration: ``data`` for ``x`` in ``for x in
    data:``, in ``for x, y in data:`` (a row unpacked into its columns), in
    ``for x, y in zip(data, labels):`` and ``for i, (x, y) in
    enumerate(zip(data, labels)):``; None for a counter, for anything
    iterated that is not a name of the script's (a call, a range) or is
    known to be something else than an array (a dataset, a generator)."""
    path: List[int] = []
    node = target
    while True:
        parent = a.parent(node)
        if isinstance(parent, cst.For) and parent.target is node:
            break
        holder = a.parent(parent) if isinstance(parent, cst.Element) else None
        if not isinstance(holder, (cst.Tuple, cst.List)) or any(isinstance(e, cst.StarredElement) for e in holder.elements):
            return None
        path.insert(0, list(holder.elements).index(parent))
        node = holder
    loop = a.parent(node)
    shape = node
    # progress bars peeled; enumerate() is not (it changes what the target holds)
    peel = apis.ITERATION_WRAPPERS - {apis.ENUMERATE}
    iterated = step_loops.unwrapped(a, loop.iter, peel)
    while isinstance(iterated, cst.Call) and a.is_name(iterated, {apis.ENUMERATE, "builtins.zip"}):
        args = [arg.value for arg in iterated.args if arg.keyword is None]
        if any(arg.star for arg in iterated.args) or not path or not isinstance(shape, (cst.Tuple, cst.List)):
            return None
        if a.is_name(iterated, {apis.ENUMERATE}):
            if len(args) != 1 or len(shape.elements) != 2 or path[0] == 0:
                return None  # the counter of enumerate()
            iterated = args[0]
        elif len(args) != len(shape.elements):
            return None
        else:
            iterated = args[path[0]]
        shape = shape.elements[path[0]].value
        path = path[1:]
        iterated = step_loops.unwrapped(a, iterated, peel)
    base = iterated
    while isinstance(base, cst.Subscript):
        base = base.value
    if not isinstance(base, cst.Name) or a.kinds(base):
        return None
    return iterated


def _is_schedule(a: A.Analysis, expr, depth: int = 0) -> bool:
    """A hyper-parameter recomputed from constants and step counters only
    (``lr = lo + (hi - lo) * math.exp(-i / decay)``, a step index fed to a
    placeholder): the same on every rank at the same step, not data."""
    if _is_constant(a, expr):
        return True
    if depth > 6:
        return False
    if isinstance(expr, cst.UnaryOperation):
        return _is_schedule(a, expr.expression, depth + 1)
    if isinstance(expr, cst.BinaryOperation):
        return _is_schedule(a, expr.left, depth + 1) and _is_schedule(a, expr.right, depth + 1)
    if isinstance(expr, cst.Call):
        names = a.names(expr)
        math = bool(names) and all(n.startswith(apis.SCALAR_MATH_PREFIXES) or n in apis.SCALAR_MATH_BUILTINS
                                   for n in names)
        return math and all(_is_schedule(a, arg.value, depth + 1) for arg in expr.args)
    if not isinstance(expr, cst.Name):
        return False
    bound = a.assigned_values(expr)
    if not bound:
        return False
    for origin, value in bound:
        if value is not None:
            if not _is_schedule(a, value, depth + 1):
                return False
            continue
        par = a.parent(origin) if isinstance(origin, cst.Name) else None
        if isinstance(par, cst.For) and par.target is origin and isinstance(par.iter, cst.Call) \
                and a.is_name(par.iter, {"builtins.range"}):
            continue  # a step counter
        if isinstance(origin, cst.AugAssign) or isinstance(par, cst.AugAssign):
            aug = origin if isinstance(origin, cst.AugAssign) else par
            if _is_constant(a, aug.value):
                continue  # step += 1
        return False
    return True


def _is_shape(a: A.Analysis, expr, depth: int) -> bool:
    """A list or tuple of constants (a shape), or of constant arrays."""
    return isinstance(expr, (cst.List, cst.Tuple)) and all(
        isinstance(e, cst.Element) and _is_constant(a, e.value, depth) for e in expr.elements)


def _rows_under_noise(a: A.Analysis, expr, loop):
    """``rows + noise``, ``rows - noise`` or ``rows * noise`` (noise drawn
    fresh each step, maybe scaled by a constant: ``0.3 * np.random.randn(...)``,
    a dropout mask): the rows, or None."""
    if not (isinstance(expr, cst.BinaryOperation) and isinstance(expr.operator, (cst.Add, cst.Subtract, cst.Multiply))):
        return None

    def noise(e) -> bool:
        if isinstance(e, cst.BinaryOperation) and isinstance(e.operator, cst.Multiply):
            return (_is_constant(a, e.left) and noise(e.right)) or (_is_constant(a, e.right) and noise(e.left))
        return _is_noise(a, e, loop)

    if noise(expr.right) and not noise(expr.left):
        return expr.left
    if noise(expr.left) and not noise(expr.right) and not isinstance(expr.operator, cst.Subtract):
        return expr.right
    return None


def _is_noise(a: A.Analysis, expr, loop) -> bool:
    """A value drawn fresh each step from one of NumPy's random
    distributions (``mask = np.random.binomial(1, p, batch.shape)``):
    noise, not data to divide. ``choice``/``permutation``/``shuffle`` draw
    from data and are not noise."""
    if isinstance(expr, cst.Name):
        bound = a.assigned_values(expr)
        return bool(bound) and all(v is not None and dataflow.is_inside(a, o, loop) and _is_noise(a, v, loop)
                                   for o, v in bound)
    if isinstance(expr, cst.Call):
        names = a.names(expr)
        if isinstance(expr.func, cst.Name) and not names & {"builtins." + expr.func.value}:
            # a local function returning noise (def sample_z(n): return np.random.uniform(...))
            functions = a.local_functions(expr.func)
            returns = [r for f in functions for r in A.returned_values(f)]
            return bool(returns) and all(isinstance(r, cst.Call) and _is_noise(a, r, loop) for r in returns)
        return samplers.is_noise_draw(a, expr)
    return False


def fed_array_roots(a: A.Analysis, runs: List[cst.Call], train_ops: Set[str]):
    """The arrays fed row by row to the train op, grouped by the function
    they are bound in (two methods may both call theirs ``X``): a list of
    (name -> a use of it, the nodes that read them); None when a fed value
    is not rows of an array bound before the loop."""
    groups: Dict[int, Tuple[Dict[str, cst.Name], List[cst.CSTNode]]] = {}
    fed = [r for r in runs if feeds(r, train_ops)]
    if not fed:
        return None
    for run in fed:
        loop = dataflow.outermost_loop(a, run)
        if loop is None:
            return None
        values = _feed_values(a, run, train_ops)
        if values is None:
            return None
        roots: Dict[str, cst.Name] = {}
        readers: List[cst.CSTNode] = []
        for v in values:
            if _is_schedule(a, v) or _is_noise(a, v, loop):
                continue
            if not _array_roots(a, v, loop, roots, readers, run):
                return None
        for name, node in roots.items():
            group_roots, group_readers = groups.setdefault(id(a.enclosing_function(node)), ({}, []))
            known = group_roots.setdefault(name, node)
            if known is not node and {id(b.node) for b in a.bindings_of(known)} != {
                    id(b.node) for b in a.bindings_of(node)}:
                return None  # another loop reads another binding of it too (rebound between them): no one point
            group_readers.extend(r for r in readers if all(r is not g for g in group_readers))
    return list(groups.values()) or None


def _full_size_uses(a: A.Analysis, block_body, first, point, roots: Set[str]) -> List[Tuple[str, int, cst.Name]]:
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


def _per_rank_sizes_in_graph(a: A.Analysis, block_body, point, roots: Set[str]) -> List[Tuple[str, int, cst.Name]]:
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


def shard_fed_arrays(ctx, runs: List[cst.Call]) -> Optional[List[step_loops.Sliced]]:
    """Slice the arrays fed through feed_dict by rank where they and every
    array derived from them are final: right after the last statement
    binding one of them (in each function binding some). Slicing each at
    its own assignment would slice a derived array twice (``labels =
    f(data)`` after ``data`` was sliced) and pair samples with labels that
    are not theirs. Returns what was sliced, or None (nothing changed) when
    that cannot be done safely."""
    a = ctx.a
    train_ops = train_op_names(a)
    groups = fed_array_roots(a, runs, train_ops)
    if groups is None:
        return None
    points = [_slice_point(ctx, roots, readers) for roots, readers in groups]
    if any(p is None for p in points):
        return None
    return [_slice_at(ctx, point, "fed through feed_dict") for point in points]


def slice_where_final(ctx, roots: Dict[str, cst.Name], readers: List[cst.CSTNode], what: str) -> Optional[step_loops.Sliced]:
    """Slice arrays read row by row by the training step (``readers``) by
    rank, all at one point: right after the last statement binding any of
    them, where they and the arrays derived from them are final."""
    point = _slice_point(ctx, roots, readers)
    return _slice_at(ctx, point, what) if point is not None else None


@dataclass
class _SlicePoint:
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


def _slice_point(ctx, roots: Dict[str, cst.Name], readers: List[cst.CSTNode]) -> Optional[_SlicePoint]:
    """Where the arrays are final (checked, nothing changed), or None."""
    a = ctx.a
    bindings = {}
    mutations: Dict[str, List[cst.BaseStatement]] = {}
    params: List[cst.Param] = []
    reorders: List[cst.Name] = []
    partners: Set[str] = set()
    for name, node in roots.items():
        def reorder(origin, name=name):
            # reordered in the loop that reads it (each epoch): the same rows
            loop = dataflow.outermost_loop(a, origin)
            found = loop is not None and any(dataflow.is_inside(a, r, loop) for r in readers) \
                and reorders_itself(a, origin, name)
            if found:
                reorders.append(origin)
                partners.update(p for p in _shuffled_with(a, origin) if p != name)
            return found
        stmts = dataflow.all_binding_statements(a, node, params=params, skip=reorder)
        if stmts is None:
            return None
        changed = _changed_in_place(a, node, stmts)
        if changed is None:
            return None
        bindings[name] = stmts
        mutations[name] = changed
    if partners - set(roots):
        # X, X_test = shuffle(X, X_test) each epoch: sliced alone, X would no
        # longer have X_test's rows to be shuffled with
        return None
    every = [s for stmts in bindings.values() for s in stmts]
    # a list filled by appends after it is bound is final after the last one
    every += [s for changed in mutations.values() for s in changed if s not in every]
    # parameters are bound at the function's entry: its body is their block
    functions = {id(a.enclosing_function(p)): a.enclosing_function(p) for p in params}
    if len(functions) > 1:
        return None
    function = next(iter(functions.values()), None)
    # bound in a nested block too (``with open(f) as fh: x = load(fh)``, then
    # ``x = reformat(x)``): final after the statement holding the last
    # binding in the outermost block holding them all
    every = _lifted_to_common_block(a, every, function.body if function is not None else None)
    blocks = {id(a.parent(s)) for s in every} | ({id(function.body)} if function is not None else set())
    if len(blocks) != 1:
        lines = ", ".join(str(a.line(s)) for s in sorted(every, key=a.line))
        ctx.warn(every[-1], data_division.RULE, ctx.say(
            "the arrays fed to the training step ({roots}) are bound in different blocks "
            "(lines {lines}): slice them by rank where they are final, all at the same point, with "
            "x = x[{rank}::{size}][:len(x) // {size}]", roots=", ".join(sorted(roots)), lines=lines))
        return None
    order = sorted(every, key=lambda s: (a.line(s), a.col(s)))
    # with no statement binding them, the arrays are final at the entry
    body = list(function.body.body if function is not None else a.parent(order[0]).body)
    entry = next((s for s in body if not _is_docstring(s)), None) if function is not None else None
    first = entry if entry is not None else order[0]
    point = order[-1] if order else None
    where = point if point is not None else function.params
    if entry is None and point is None:
        return None
    if not all(dataflow.after(a, r, where) for r in [*readers, *reorders]):
        return None
    # another training loop had some of these bindings sliced at another
    # point (after the first of two blocks binding y): slicing here as well
    # would divide what comes through those bindings twice
    earlier = ctx.state(__name__ + ".sliced_bindings", dict)
    key = lambda n: (n, id(bindings[n][-1]) if bindings[n] else id(function))  # noqa: E731
    if any(key(n) not in ctx.state(__name__ + ".sliced") and {id(s) for s in bindings[n]} & earlier.get(n, set())
           for n in roots):
        return None
    if not data_division.arrays_sliced_where_bound(ctx, set(roots), bindings, where, rows_under):
        ctx.warn(point if point is not None else entry, data_division.RULE, ctx.say(
            "{roots} (read by the training loop) are also handed to fit() mixed with other data, which tfdist "
            "slices there: slice each array once, by rank, where it is final, and hand fit() the shares",
            roots=", ".join(sorted(roots))))
        return None
    return _SlicePoint(roots, bindings, every, body, first, point, entry, function)


def _lifted_to_common_block(a: A.Analysis, stmts: List[cst.BaseStatement], entry_block) -> List[cst.BaseStatement]:
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


def _changed_in_place(a: A.Analysis, node: cst.Name, stmts: List[cst.BaseStatement]) -> Optional[List[cst.BaseStatement]]:
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


def _slice_at(ctx, found: _SlicePoint, what: str) -> step_loops.Sliced:
    a = ctx.a
    roots, bindings, every, body, first = found.roots, found.bindings, found.every, found.body, found.first
    point, entry, function, where = found.point, found.entry, found.function, found.where
    for name, line, use in _full_size_uses(a, body, first, point, set(roots)):
        ctx.warn(use, data_division.RULE,
                 f"{name} (line {line}) is computed from the full data, which tfdist slices by rank after line "
                 f"{a.line(point)}, and is used here: compute {name} after line {a.line(point)} so it describes "
                 f"this rank's share")
    for name, line, use in _per_rank_sizes_in_graph(a, body, point, set(roots)):
        ctx.warn(use, data_division.RULE, ctx.say(
            "{name} (line {line}) is computed from the data after tfdist slices it by rank (line "
            "{point}), so it is this rank's count; it is used in a TensorFlow expression here: if it "
            "should be the size of the whole data set (e.g. to normalise the loss), multiply it by {size}",
            name=name, line=str(line), point=str(a.line(where))))
    # shuffled or split at random on the way (unseeded): one seed on every
    # rank, or the shares would overlap
    values = [dataflow.value_of_statement(s) for s in every if dataflow.value_of_statement(s) is not None]
    if function is not None:  # parameters: what the callers hand in
        values += [arg for p in function.params.params for _, arg in a.argument_values(p)
                   if p.name.value in roots]
    data_division.same_random_split(ctx, values)
    names = sorted(roots, key=lambda n: (a.line(bindings[n][0]) if bindings[n] else 0, n))
    # another training loop reading the same arrays sliced them already
    done = ctx.state(__name__ + ".sliced")
    key = lambda n: (n, id(bindings[n][-1]) if bindings[n] else id(function))  # noqa: E731
    fresh = [n for n in names if key(n) not in done]
    done.update(key(n) for n in fresh)
    for n in fresh:
        ctx.state(__name__ + ".sliced_bindings", dict).setdefault(n, set()).update(id(s) for s in bindings[n])
    if not fresh:
        return step_loops.Sliced(set(roots), where)
    names = fresh
    lines = "\n".join(f"{n} = {ctx.backend.shard_array(n)}" for n in names)
    sliced = ctx.stmts(lines, comment=ctx.say("{engine}: each rank trains on its own equal share of the samples."))
    if point is not None:
        ctx.plan.insert_after(point, sliced)
    else:
        ctx.plan.insert_before(entry, sliced)
    derived = [n for n in names if bindings[n] and bindings[n][0] is not first and dataflow.depends_on(
        a, dataflow.value_of_statement(bindings[n][-1]) or cst.Name("_"), set(roots) - {n})]
    note = f" (after {', '.join(derived)} {'is' if len(derived) == 1 else 'are'} derived, so pairs stay intact)" if derived else ""
    place = " at the entry of " + function.name.value + "()" if point is None else ""
    ctx.change(point if point is not None else entry, data_division.RULE,
               f"{', '.join(names)} ({what}) sliced by rank{place}, equal share per rank{note}")
    return step_loops.Sliced(set(roots), where)


def _is_docstring(stmt) -> bool:
    return isinstance(stmt, cst.SimpleStatementLine) and len(stmt.body) == 1 and isinstance(stmt.body[0], cst.Expr) \
        and isinstance(stmt.body[0].value, (cst.SimpleString, cst.ConcatenatedString))


def _fed_samplers(a: A.Analysis, runs: List[cst.Call], train_ops: Set[str]) -> Optional[List[samplers.Sampler]]:
    """The samplers every non-constant fed value comes from, or None."""
    out: List[samplers.Sampler] = []
    for run in [r for r in runs if feeds(r, train_ops)]:
        values = _feed_values(a, run, train_ops)
        if values is None:
            return None
        loop = dataflow.outermost_loop(a, run)
        for v in values:
            if _is_schedule(a, v) or (loop is not None and _is_noise(a, v, loop)):
                continue
            found = samplers.fed_by_sampler(a, v, loop)
            if not found:
                return None
            out += [s for s in found if all(s.call is not o.call for o in out)]
    return out or None


def _fed_arrays_read(a: A.Analysis, runs: List[cst.Call], train_ops: Set[str]) -> List[cst.Name]:
    out: List[cst.Name] = []
    for run in [r for r in runs if feeds(r, train_ops)]:
        loop = dataflow.outermost_loop(a, run)
        if loop is None:
            continue
        for v in _feed_values(a, run, train_ops) or ():
            out += [n for n in samplers.arrays_read(a, v, loop) if all(n is not o for o in out)]
    return out


def divide_fed_data(ctx, sharded: bool, where) -> List[cst.Call]:
    """Divide the data a TF1 script trains on, once, along its flow: the
    tf.data input was sharded (``sharded``); or the fed arrays are sliced
    where they are final; or the samplers feeding the step draw one stream
    per rank; then the step loop runs 1/size of its steps unless its count
    comes from sliced arrays. Returns the train-op runs."""
    a = ctx.a
    train_ops = train_op_names(a)
    runs = train_runs(a, a.module, train_ops)
    full_batch = None if sharded else full_batch_feeds(ctx)
    if full_batch is not None:
        roots, readers = full_batch
        if slice_where_final(ctx, roots, readers, "used whole at every step: full-batch training") is not None:
            ctx.facts["full_batch"] = True  # for tfdist verify: every rank runs every step
            return runs  # each step is still one pass over (now this rank's share of) the data: steps kept
    sliced = None if sharded else shard_fed_arrays(ctx, runs)
    fed_samplers = _fed_samplers(a, runs, train_ops) if not sharded and sliced is None else None
    if fed_samplers:
        samplers.draw_per_rank(ctx, fed_samplers)
        # the rows are drawn from arrays a random split made: the same split on every rank
        data_division.same_random_split(ctx, _fed_arrays_read(a, runs, train_ops))
    runs = divide_step_loops(ctx, sharded, sliced)
    if not sharded and sliced is not None:
        _unfed_runs_on_undivided_data(ctx, runs, train_ops, sliced)
    if not sharded and sliced is None and not fed_samplers:
        fed = [r for r in runs if feeds(r, train_ops)]
        whole = _whole_feeds(a, fed, train_ops)
        if whole:
            names = ", ".join(sorted({a.code(v) for v in whole}))
            ctx.warn(whole[0], data_division.RULE, ctx.say(
                "the whole of {names} is fed at every step (full-batch training): tfdist cannot divide it "
                "without changing what a step means; give each rank x[{rank}::{size}] of each, keep "
                "the number of steps, and keep the original learning rate -- or feed mini-batches", names=names))
        elif fed and _fed_from_streams(ctx, fed, train_ops):
            pass  # what is fed comes from an iterable each rank takes its own share of
        elif fed:
            ctx.warn(fed[0], data_division.RULE, ctx.say(
                "the data fed through feed_dict is built where tfdist cannot follow it: each rank now runs "
                "1/size of the steps, so make sure each rank feeds different samples (e.g. draw them from "
                "arrays sliced with [{rank}::{size}], or seed the sampler with {rank})"))
        elif not _shuffling_queue_streams(ctx):
            ctx.warn(where, data_division.RULE, ctx.say("no tf.data pipeline found: make sure each rank feeds different "
                                                        "samples (e.g. shard the input by {rank})"))
    return runs


def _unfed_runs_on_undivided_data(ctx, runs: List[cst.Call], train_ops: Set[str],
                                  sliced: List[step_loops.Sliced]) -> None:
    """Beside the runs fed the sliced arrays, a run feeding nothing (a
    second training on data written into its graph, ``tf.constant(Z)``)
    now runs 1/size of its steps too: on every rank's own share when its
    loss is built from the sliced arrays, else on the very same data on
    every rank (nothing divided): warned, naming the run."""
    a = ctx.a
    if any(a.names(c) & apis.TF1_QUEUE_READERS or a.is_kind(c, A.DATASET) for c in a.calls):
        return  # read from a queue: see _shuffling_queue_streams
    for run in runs:
        if feeds(run, train_ops) or dataflow.outermost_loop(a, run) is None:
            continue
        losses = [c.args[0].value for c in optimizer_loss_calls(a) if c.args
                  and any(mentions(run.args[0].value, {n}) for n in _bound_names(a, c))]
        names = {n for part in sliced for n in part.names}
        if losses and any(dataflow.depends_on(a, loss, names) for loss in losses):
            continue
        ctx.warn(run, data_division.RULE, ctx.say(
            "this run trains on data it is not fed (built into its graph, or read where tfdist cannot see), not "
            "on the arrays tfdist divided: each rank now runs 1/size of its steps on the same data; give each rank "
            "its own share of that data, e.g. x[{rank}::{size}], where it is made"))


def _bound_names(a: A.Analysis, call: cst.Call) -> Set[str]:
    """The names ``call``'s result is bound to (``op1`` in ``op1 = opt.minimize(loss1)``)."""
    for anc in a.ancestors(call):
        if isinstance(anc, cst.Assign):
            return {n.value for t in anc.targets for n in walk(t.target) if isinstance(n, cst.Name)}
        if isinstance(anc, cst.BaseStatement):
            break
    return set()


def _shuffling_queue_streams(ctx) -> bool:
    """The loss reads batches a TF1 shuffling queue draws
    (tf.train.shuffle_batch) with no seed of its own and no graph seed:
    every rank draws its own random stream, and with 1/size of the steps
    each (divided above) that divides the work. True when so (reported);
    with a seed every rank would draw the same stream: warned."""
    a = ctx.a
    queues = [c for c in a.calls if a.is_name(c, apis.TF1_SHUFFLING_QUEUES) or (
        a.is_name(c, apis.TF1_SHUFFLING_PRODUCERS) and not _shuffle_off(c))]
    if not queues:
        return False
    batches = set()
    for q in queues:
        batches |= _bound_names(a, q)
    batches |= _returned_by_callers(a, queues, batches)
    losses = [v for c in optimizer_loss_calls(a) if c.args for v in _argument_values(a, c.args[0].value)]
    if not batches or not losses or not all(dataflow.depends_on(a, loss, batches) for loss in losses):
        return False
    seeded = [c for c in a.calls if a.is_name(c, apis.TF_GLOBAL_SEED_SETTERS)] + [
        q for q in queues if find_arg(q, "seed") is not None]
    if seeded:
        ctx.warn(seeded[0], data_division.RULE, ctx.say(
            "{call} fixes the seed {queue} draws its batches with, so every rank draws the same stream: add {rank} "
            "to that seed (every rank then draws its own; the initial variables are broadcast from rank 0)",
            call=a.code(seeded[0].func), queue=a.code(queues[0].func)))
        return True
    ctx.change(queues[0], data_division.RULE, ctx.say(
        "{queue} draws a random stream of batches on each rank (no seed): every rank trains on its own draw, "
        "1/{size} of the steps each", queue=a.code(queues[0].func)))
    return True


def _argument_values(a: A.Analysis, expr) -> List[cst.BaseExpression]:
    """expr, or what the calls pass for it when it is a parameter
    (``minimize(loss_value)`` in ``def train_step(loss_value)``)."""
    if isinstance(expr, cst.Name):
        params = [origin for origin, _ in a.assigned_values(expr) if isinstance(origin, cst.Param)]
        if params:
            return [v for p in params for v in a.parameter_values(p)] or [expr]
    return [expr]


def _shuffle_off(call: cst.Call) -> bool:
    arg = find_arg(call, "shuffle")
    return arg is not None and isinstance(arg.value, cst.Name) and arg.value.value == "False"


def _returned_by_callers(a: A.Analysis, queues: List[cst.Call], batches: Set[str]) -> Set[str]:
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
        grown = {n for c in calls for n in _bound_names(a, c)} - out - batches
        if not grown:
            break
        out |= grown
        functions = {a.enclosing_function(c) for c in calls} - {None}
    return out


def _fed_from_streams(ctx, fed: List[cst.Call], train_ops: Set[str]) -> bool:
    """Every feeding run is in a loop whose iterable each rank now takes its
    own share of (step_loops.share_stream), and every value it feeds that
    is not a constant comes from that iterable's elements: the data fed is
    divided."""
    a = ctx.a
    streams = ctx.state(__name__ + ".streams", list)
    for run in fed:
        loop = next((l for l in streams if dataflow.is_inside(a, run, l)), None)
        values = _feed_values(a, run, train_ops)
        if loop is None or values is None:
            return False
        reached = step_loops.stream_reach(a, loop) or set()
        if not all(_is_constant(a, v) or step_loops.reads(v, reached) for v in values):
            return False
    return True


def _whole_feeds(a: A.Analysis, fed: List[cst.Call], train_ops: Set[str]) -> List[cst.BaseExpression]:
    """Fed values that are a whole array (or literal list) bound outside the step loop."""
    out = []
    for run in fed:
        loop = dataflow.outermost_loop(a, run)
        for v in _feed_values(a, run, train_ops) or ():
            if isinstance(v, (cst.List, cst.Tuple)) and not _is_constant(a, v):
                out.append(v)
            elif isinstance(v, cst.Name) and not _is_constant(a, v) and loop is not None:
                bound = a.assigned_values(v)
                if bound and not any(dataflow.is_inside(a, o, loop) or isinstance(o, cst.Param) for o, _ in bound):
                    out.append(v)
    return out


def full_batch_feeds(ctx) -> Optional[Tuple[Dict[str, cst.Name], List[cst.CSTNode]]]:
    """(arrays, the runs feeding them) when every non-constant value fed to
    the train op is a whole array bound before the step loop, the same at
    every step -- full-batch training; None otherwise. Computed once per file."""
    cache = ctx.state(__name__ + ".full_batch", dict)
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
        values = _feed_values(a, run, train_ops)
        if loop is None or values is None:
            return None
        for v in values:
            if _is_constant(a, v):
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
