"""Pieces shared by the TF1 rules (Session and MonitoredSession)."""
from __future__ import annotations

from typing import List, Optional, Set

import libcst as cst

from .. import apis
from ..engine import analysis as A
from ..engine.scopes import walk
from . import data_division, lr_scaling
from .common import append_arg, calls_in, find_arg, kwarg, mentions, method_name, positional, receiver

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
        raise ctx.unsupported(applies[0], "apply_gradients() with gradients not computed by the optimizer's "
                                          "compute_gradients(): DistributedOptimizer would not average them "
                                          "(use optimizer.compute_gradients or minimize)")


def wrap_optimizers(ctx) -> None:
    a = ctx.a
    for call in optimizer_calls(a):
        name = next(t.name for t in a.types(call) if t.kind == A.TF1_OPTIMIZER)
        lr_scaling.scale_optimizer_lr(ctx, call, name)
        template = ctx.backend.wrap_optimizer("{inner}", keras=False)
        ctx.plan.replace(call, lambda upd, t=template: ctx.expr(t, inner=ctx.module.code_for_node(upd)))
        ctx.change(call, "distributed-optimizer", f"{a.code(call.func)} wrapped in DistributedOptimizer (gradients averaged across ranks)")


def train_op_names(a: A.Analysis) -> Set[str]:
    """Names bound to ``optimizer.minimize(...)`` / ``apply_gradients`` results."""
    names: Set[str] = set()
    for c in a.calls:
        if method_name(c) in ("minimize", "apply_gradients"):
            for anc in a.ancestors(c):
                if isinstance(anc, cst.Assign):
                    for t in anc.targets:
                        if isinstance(t.target, cst.Name):
                            names.add(t.target.value)
                    break
                if isinstance(anc, cst.BaseStatement):
                    break
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
            if stmt is not None and stmt not in ctx.pinned:
                ctx.pinned.add(stmt)
                line = f"{value.value}.gpu_options.visible_device_list = {ctx.backend.tf1_visible_device_list()}"
                ctx.plan.insert_after(stmt, ctx.stmts(line, comment="Horovod: pin one GPU per process."))
                ctx.change(stmt, "gpu-pinning", f"{value.value} pins one GPU per process (by local rank)")
            return
    if isinstance(target, cst.Call) and a.is_kind(target, A.CONFIG_PROTO):
        gpu = find_arg(target, "gpu_options")
        if gpu is None:
            if target not in ctx.pinned:
                ctx.pinned.add(target)
                new_arg = kwarg("gpu_options", ctx.expr(f"{tf1}.GPUOptions(visible_device_list={ctx.backend.tf1_visible_device_list()})"))
                ctx.plan.replace(target, lambda c: add_kwarg(c, new_arg))
                ctx.change(target, "gpu-pinning", "session config pins one GPU per process (by local rank)")
            return
        options = gpu.value
        if (isinstance(options, cst.Call) and a.is_name(options, {GPU_OPTIONS})
                and find_arg(options, "visible_device_list") is None and not any(x.star for x in options.args)):
            if options not in ctx.pinned:
                ctx.pinned.add(options)
                new_arg = kwarg("visible_device_list", ctx.expr(ctx.backend.tf1_visible_device_list()))
                ctx.plan.replace(options, lambda c: add_kwarg(c, new_arg))
                ctx.change(options, "gpu-pinning", "session config pins one GPU per process (by local rank)")
            return
    ctx.warn(value, "gpu-pinning", "set config.gpu_options.visible_device_list = str(hvd.local_rank()) on this config by hand")


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
    tf = ctx.name("tf")
    bound = ctx.imports.bound.get(tf)
    return tf if bound == "tensorflow.compat.v1" else f"{tf}.compat.v1"


def shard_input(ctx) -> bool:
    """Shard the datasets turned into iterators. True if any was."""
    a = ctx.a
    found = False
    for c in a.calls:
        ds = None
        if a.is_name(c, apis.DATASET_ITERATOR_FUNCTIONS) and c.args:
            ds = c.args[0].value
        elif method_name(c) in ("make_one_shot_iterator", "make_initializable_iterator") and a.is_kind(receiver(c), A.DATASET):
            ds = receiver(c)
        if ds is not None and data_division.shard_dataset(ctx, ds, "input pipeline"):
            found = True
    return found


def train_runs(a: A.Analysis, node, train_ops: Set[str]) -> List[cst.Call]:
    """``sess.run(train_op, ...)`` / ``train_op.run(...)`` calls inside node."""
    out = []
    for c in calls_in(node):
        if method_name(c) != "run":
            continue
        if c.args and c.args[0].keyword is None and (mentions(c.args[0].value, train_ops) or any(
                method_name(x) == "minimize" for x in calls_in(c.args[0].value))):
            out.append(c)
            continue
        recv = receiver(c)
        if isinstance(recv, cst.Name) and recv.value in train_ops:
            out.append(c)
        elif isinstance(recv, cst.Call) and method_name(recv) == "minimize":
            out.append(c)
    return out


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
    """``while True:`` ended by tf.errors.OutOfRangeError (the data runs out)."""
    if not (isinstance(loop.test, cst.Name) and loop.test.value == "True"):
        return False
    return any(isinstance(n, cst.ExceptHandler) and n.type is not None and "OutOfRangeError" in a.code(n.type)
               for n in walk(loop))


def divide_step_loops(ctx, sharded: bool, data_names: Set[str] = frozenset()) -> List[cst.Call]:
    """Divide the innermost loop running the train op: each rank runs 1/size of the steps.

    A ``while`` loop that stops on its own (``should_stop()``, or the end of
    a sharded tf.data input) is left alone, and so is a ``range`` counted
    from arrays already sharded (``data_names``). Returns the train-op runs.
    """
    a = ctx.a
    train_ops = train_op_names(a)
    loops = sorted(a.for_loops + a.while_loops, key=lambda n: (a.line(n), a.col(n)))
    training = [l for l in loops if runs_train_op(a, l.body, train_ops)]
    innermost = [l for l in training
                 if not any(o is not l and any(x is l for x in a.ancestors(o)) for o in training)]
    for loop in innermost:
        if isinstance(loop, cst.For):
            it = loop.iter
            if (isinstance(it, cst.Call) and isinstance(it.func, cst.Name) and it.func.value == "range"
                    and len(it.args) == 1 and it.args[0].keyword is None and not it.args[0].star):
                if not (data_names and _depends_on(a, it.args[0].value, data_names)):
                    data_division.divide(ctx, it.args[0].value, "training steps")
            else:
                ctx.warn(loop, data_division.RULE, "cannot divide this training loop: make each rank run 1/size of its steps")
        elif _should_stop_loop(loop) or (sharded and _until_out_of_range(a, loop)):
            continue
        else:
            ctx.warn(loop, data_division.RULE, "cannot divide this training loop: make each rank run 1/size of its steps")
    runs = train_runs(a, a.module, train_ops)
    if runs and not training:
        ctx.warn(runs[0], data_division.RULE, "training loop not found: make each rank run 1/size of the training steps")
    return runs


def _depends_on(a: A.Analysis, expr, names: Set[str], depth: int = 0) -> bool:
    """expr mentions one of names, directly or through the values of the names it uses."""
    if depth > 8:
        return False
    if mentions(expr, names):
        return True
    used = [n for n in walk(expr) if isinstance(n, cst.Name)]
    for n in used:
        for _, value in a.assigned_values(n):
            if value is not None and _depends_on(a, value, names, depth + 1):
                return True
    return False


def _feed_values(a: A.Analysis, run: cst.Call, train_ops: Set[str]) -> Optional[List[cst.BaseExpression]]:
    """The values of the feed_dict of a run call (a dict literal, maybe through one name)."""
    arg = find_arg(run, "feed_dict")
    if arg is None:
        pos = positional(run)
        recv = receiver(run)
        op_run = (isinstance(recv, cst.Name) and recv.value in train_ops) or isinstance(recv, cst.Call)
        index = 0 if op_run else 1
        arg = pos[index] if index < len(pos) else None
    if arg is None:
        return None
    value = arg.value
    if isinstance(value, cst.Name):
        bound = a.assigned_values(value)
        value = bound[0][1] if len(bound) == 1 else None
    if not isinstance(value, cst.Dict) or any(not isinstance(e, cst.DictElement) for e in value.elements):
        return None
    return [e.value for e in value.elements]


def _root_array(expr) -> Optional[cst.Name]:
    """``x_train`` in ``x_train``, ``x_train[a:b]``, ``x_train[idx]``."""
    while isinstance(expr, cst.Subscript):
        expr = expr.value
    return expr if isinstance(expr, cst.Name) else None


def _binding_statement(a: A.Analysis, name: cst.Name):
    """The one plain assignment statement (``x = ...``, ``x, y = ...``) binding name, else None."""
    bound = a.assigned_values(name)
    if len(bound) != 1:
        return None
    origin = bound[0][0]
    node = origin
    while node is not None and not isinstance(node, cst.BaseSmallStatement):
        if isinstance(node, (cst.Param, cst.CompFor, cst.For, cst.With, cst.WithItem, cst.BaseCompoundStatement)):
            return None
        node = a.parent(node)
    if not isinstance(node, cst.Assign):
        return None
    stmt = a.statement_of(node)
    if not (isinstance(stmt, cst.SimpleStatementLine) and len(stmt.body) == 1):
        return None
    return stmt


def shard_fed_arrays(ctx, runs: List[cst.Call]) -> Set[str]:
    """Arrays fed through feed_dict, bound once before the training loop,
    are sharded right where they are bound. Returns their names, or an
    empty set (nothing changed) when that cannot be done for every feed."""
    a = ctx.a
    train_ops = train_op_names(a)
    fed = [r for r in runs if feeds(r, train_ops)]
    if not fed:
        return set()
    arrays = {}  # name -> binding statement
    for run in fed:
        loops = [x for x in a.ancestors(run) if isinstance(x, (cst.For, cst.While))]
        if not loops:
            return set()
        values = _feed_values(a, run, train_ops)
        if values is None:
            return set()
        for v in values:
            root = _root_array(v)
            stmt = _binding_statement(a, root) if root is not None else None
            if stmt is None or any(x is loops[-1] for x in a.ancestors(stmt)):
                return set()  # per-step data (bound in the loop), a parameter, ...
            arrays.setdefault(root.value, stmt)
    by_stmt = {}
    for name, stmt in arrays.items():
        by_stmt.setdefault(stmt, []).append(name)
    for stmt, names in by_stmt.items():
        lines = "\n".join(f"{n} = {ctx.backend.shard_array(n)}" for n in names)
        ctx.plan.insert_after(stmt, ctx.stmts(lines, comment="Horovod: each rank trains on its own equal share of the samples."))
        ctx.change(stmt, data_division.RULE, f"{', '.join(names)} (fed through feed_dict) sliced by rank, equal share per rank")
    return set(arrays)
