"""TF1 ``tf.train.MonitoredTrainingSession`` training.

Horovod's recipe: ``BroadcastGlobalVariablesHook(0)`` in the hooks,
checkpoints and summaries only on rank 0 (``checkpoint_dir=None``
elsewhere), ``StopAtStepHook`` steps divided, one GPU per process.
"""
from __future__ import annotations

from typing import List

import libcst as cst

from .. import apis
from ..engine import analysis as A
from ..engine.findings import Evidence
from . import data_division, tf1_common
from .common import append_arg, find_arg, kwarg, prepend_elements, source

PATTERN = "MonitoredSession"
RULE = "monitored-session"


def monitored(a: A.Analysis) -> List[cst.Call]:
    return [c for c in a.calls if a.is_name(c, apis.TF1_MONITORED_SESSIONS)]


def detect(a: A.Analysis) -> List[Evidence]:
    return [Evidence(PATTERN, f"{a.code(c.func)}(...)", a.line(c)) for c in monitored(a)]


def apply(ctx) -> None:
    a = ctx.a
    tf1_common.wrap_optimizers(ctx)
    for call in monitored(a):
        _hooks(ctx, call)
        for key in ("checkpoint_dir", "summary_dir"):
            arg = find_arg(call, key, 2 if key == "checkpoint_dir" else None)
            if arg is not None:
                new = ctx.expr(f"{source(a.module, arg.value)} if {ctx.backend.is_chief()} else None")
                ctx.plan.replace(arg.value, lambda old, new=new: new)
                ctx.change(arg.value, "rank0-io", f"{key} only on rank 0 (other ranks write no checkpoints or summaries)")
        if a.is_name(call, {"tensorflow.train.MonitoredTrainingSession"}):
            tf1_common.pin_config(ctx, call, None)
        else:
            ctx.warn(call, "gpu-pinning", "pin one GPU per process in the session creator's config (visible_device_list = str(hvd.local_rank()))")
    for c in a.calls:
        if a.is_name(c, {apis.TF1_STOP_AT_STEP_HOOK}):
            arg = find_arg(c, "last_step") or find_arg(c, "num_steps", 0)
            if arg is not None:
                data_division.divide(ctx, arg.value, f"StopAtStepHook {arg.keyword.value if arg.keyword else 'num_steps'}")
    if not tf1_common.shard_input(ctx):
        ctx.warn(monitored(a)[0], data_division.RULE, "no tf.data pipeline found: make sure each rank feeds different samples")


def _hooks(ctx, call: cst.Call) -> None:
    a = ctx.a
    hook = ctx.backend.tf1_broadcast_hook()
    arg = find_arg(call, "hooks")
    if arg is None:
        new = ctx.expr(f"[{hook}]")
        ctx.plan.replace(call, lambda c: append_arg(c, kwarg("hooks", new)))
        ctx.change(call, "broadcast", "BroadcastGlobalVariablesHook added: initial variables broadcast from rank 0")
        return
    value = arg.value
    target = value
    if isinstance(value, cst.Name):
        bound = a.assigned_values(value)
        if len(bound) == 1 and isinstance(bound[0][1], cst.List):
            target = bound[0][1]
    if isinstance(target, cst.List):
        if target not in ctx.wrapped:
            ctx.wrapped.add(target)
            new_elem = ctx.expr(hook)
            ctx.plan.replace(target, lambda old: prepend_elements(old, [new_elem]))
            ctx.change(target, "broadcast", "BroadcastGlobalVariablesHook added first: initial variables broadcast from rank 0")
        return
    new = ctx.expr(f"[{hook}, *{source(a.module, value)}]")
    ctx.plan.replace(value, lambda old: new)
    ctx.change(value, "broadcast", "BroadcastGlobalVariablesHook added: initial variables broadcast from rank 0")
