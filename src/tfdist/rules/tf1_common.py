"""Pieces shared by the TF1 rules (Session and MonitoredSession)."""
from __future__ import annotations

from typing import List, Set

import libcst as cst

from .. import apis
from ..engine import analysis as A
from . import data_division, lr_scaling
from .common import append_arg, find_arg, kwarg, method_name, receiver


def optimizer_calls(a: A.Analysis) -> List[cst.Call]:
    return [c for c in a.calls if any(t.kind == A.TF1_OPTIMIZER and t.call is c for t in a.types(c))]


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


def pin_config(ctx, call: cst.Call, position) -> None:
    """Pass a ConfigProto that makes only this rank's GPU visible."""
    a = ctx.a
    arg = find_arg(call, "config", position)
    tf1 = _tf1_prefix(ctx, call)
    if arg is None:
        new = ctx.expr(ctx.backend.tf1_device_config(tf1))
        ctx.plan.replace(call, lambda c: append_arg(c, kwarg("config", new)))
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
    if isinstance(target, cst.Call) and a.is_kind(target, A.CONFIG_PROTO) and find_arg(target, "gpu_options") is None:
        new_arg = kwarg("gpu_options", ctx.expr(f"{tf1}.GPUOptions(visible_device_list={ctx.backend.tf1_visible_device_list()})"))
        ctx.plan.replace(target, lambda c: append_arg(c, new_arg))
        ctx.change(target, "gpu-pinning", "session config pins one GPU per process (by local rank)")
        return
    ctx.warn(value, "gpu-pinning", "set config.gpu_options.visible_device_list = str(hvd.local_rank()) on this config by hand")


def _tf1_prefix(ctx, call: cst.Call) -> str:
    """``tf`` or ``tf.compat.v1``: the namespace the session was built from."""
    func = call.func
    if isinstance(func, cst.Attribute):
        prefix = func.value
        # tf.train.MonitoredTrainingSession -> tf
        if isinstance(prefix, cst.Attribute) and prefix.attr.value == "train":
            prefix = prefix.value
        return ctx.a.code(prefix)
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


def runs_train_op(a: A.Analysis, node, train_ops: Set[str]) -> bool:
    from .common import calls_in, mentions
    for c in calls_in(node):
        if method_name(c) == "run" and c.args and (mentions(c.args[0].value, train_ops) or any(
                method_name(x) == "minimize" for x in calls_in(c.args[0].value))):
            return True
    return False
