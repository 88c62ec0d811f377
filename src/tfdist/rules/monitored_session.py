"""TF1 ``tf.train.MonitoredTrainingSession`` / ``MonitoredSession`` training.

Horovod's recipe: ``BroadcastGlobalVariablesHook(0)`` in the hooks,
checkpoints and summaries only on rank 0 (``checkpoint_dir=None``
elsewhere, chief-only hooks and file-writing hooks on rank 0 only),
``StopAtStepHook`` steps divided, one GPU per process.
"""
from __future__ import annotations

from typing import Set
import libcst as cst
from .. import apis
from ..engine import analysis as A
from ..facts.monitored_sessions import PATTERN, detect, monitored
from ..facts.syntax import append_arg, find_arg, kwarg, method_name, prepend_elements, source
from ..actions import sharding
from ..actions import tf1_edits
from ..facts import kinds
from ..facts import sessions
from ..facts import tf1_graphs
from ..facts import tf1_train_ops
from ..engine.rule import Rule, register


RULE = kinds.MONITORED_SESSION

MTS = "tensorflow.train.MonitoredTrainingSession"
MONITORED = "tensorflow.train.MonitoredSession"
SINGULAR = "tensorflow.train.SingularMonitoredSession"
# Positions of hooks= / config= in each constructor's signature.
HOOKS_POS = {MTS: 4, MONITORED: 1, SINGULAR: 0}
CONFIG_POS = {MTS: 9, SINGULAR: 3}


def _wrapped(ctx) -> set:
    """Hook lists already given the broadcast hook (per conversion)."""
    return ctx.state("monitored_session.wrapped")


def apply(ctx) -> None:
    a = ctx.a
    tf1_edits.check_convertible(ctx)
    tf1_edits.wrap_optimizers(ctx)
    chief = ctx.backend.is_chief()
    chief_only: Set[cst.CSTNode] = set()
    for call in monitored(a):
        kind = a.is_name(call, apis.TF1_MONITORED_SESSIONS)
        _hooks(ctx, call, HOOKS_POS[kind])
        if kind == MTS:
            for key, pos in (("checkpoint_dir", 2), ("summary_dir", 14), ("chief_only_hooks", 5)):
                arg = find_arg(call, key, pos)
                if arg is None or (isinstance(arg.value, cst.Name) and arg.value.value == "None"):
                    continue
                if key == "chief_only_hooks":
                    chief_only |= _list_of(a, arg.value)
                new = ctx.expr(f"{source(a.module, arg.value)} if {chief} else None")
                ctx.plan.replace(arg.value, lambda old, new=new: new)
                what = "chief-only hooks run" if key == "chief_only_hooks" else f"{key} only"
                ctx.change(arg.value, "rank0-io", f"{what} on rank 0 (other ranks write no checkpoints or summaries)")
        if kind in CONFIG_POS:
            tf1_edits.pin_config(ctx, call, CONFIG_POS[kind])
        else:
            _pin_creator(ctx, call)
    # A plain tf.Session next to it (evaluation, export) takes one GPU too.
    for s in sessions.sessions(a):
        tf1_edits.pin_config(ctx, s, 2)
        ctx.warn(s, RULE, "this tf.Session runs on every rank, but only rank 0 writes checkpoints: "
                          "if it restores one, run it on rank 0 only")
    for c in a.calls:
        if a.is_name(c, {apis.TF1_STOP_AT_STEP_HOOK}):
            arg = find_arg(c, "last_step", 1) or find_arg(c, "num_steps", 0)
            if arg is not None:
                what = arg.keyword.value if arg.keyword else ("last_step" if arg is find_arg(c, (), 1) else "num_steps")
                sharding.divide(ctx, arg.value, f"StopAtStepHook {what}")
    _file_writing_hooks(ctx, chief_only)
    sharded = tf1_edits.shard_input(ctx)
    tf1_edits.divide_fed_data(ctx, sharded, monitored(a)[0])


def _list_of(a: A.Analysis, value) -> Set[cst.CSTNode]:
    """The list literal a hooks argument is (directly or through one binding)."""
    if isinstance(value, cst.Name):
        bound = a.assigned_values(value)
        if len(bound) == 1:
            value = bound[0][1]
    return {value} if isinstance(value, cst.List) else set()


def _hooks(ctx, call: cst.Call, position: int) -> None:
    a = ctx.a
    hook = ctx.backend.tf1_broadcast_hook()
    arg = find_arg(call, "hooks", position)
    if arg is None or (isinstance(arg.value, cst.Name) and arg.value.value == "None"):
        new = ctx.expr(f"[{hook}]")
        if arg is None:
            ctx.plan.replace(call, lambda c: append_arg(c, kwarg("hooks", new)))
        else:
            ctx.plan.replace(arg.value, lambda old: new)
        ctx.change(call, "broadcast", ctx.say("{broadcast_hook} added: initial variables broadcast from rank 0"))
        return
    value = arg.value
    targets = _list_of(a, value)
    if targets:
        target = targets.pop()
        if target not in _wrapped(ctx):
            _wrapped(ctx).add(target)
            new_elem = ctx.expr(hook)
            ctx.plan.replace(target, lambda old: prepend_elements(old, [new_elem]))
            ctx.change(target, "broadcast", ctx.say("{broadcast_hook} added first: initial variables broadcast from rank 0"))
        return
    new = ctx.expr(f"[{hook}, *{source(a.module, value)}]")
    ctx.plan.replace(value, lambda old: new)
    ctx.change(value, "broadcast", ctx.say("{broadcast_hook} added: initial variables broadcast from rank 0"))


def _pin_creator(ctx, call: cst.Call) -> None:
    """MonitoredSession: the GPU is pinned in its ChiefSessionCreator's config."""
    a = ctx.a
    arg = find_arg(call, "session_creator", 0)
    if arg is None:
        tf1 = tf1_train_ops.tf1_prefix(ctx, call)
        new = ctx.expr(f"{tf1}.train.ChiefSessionCreator(config={ctx.backend.tf1_device_config(tf1)})")
        ctx.plan.replace(call, lambda c: append_arg(c, kwarg("session_creator", new)))
        ctx.change(call, "gpu-pinning", "session creator's config pins one GPU per process (by local rank)")
        return
    creator = arg.value
    if isinstance(creator, cst.Name):
        bound = a.assigned_values(creator)
        if len(bound) == 1 and isinstance(bound[0][1], cst.Call):
            creator = bound[0][1]
    if isinstance(creator, cst.Call) and a.is_name(creator, {tf1_train_ops.CHIEF_SESSION_CREATOR}):
        tf1_edits.pin_config(ctx, creator, 2)
        return
    ctx.warn(arg.value, "gpu-pinning", ctx.say("pin one GPU per process in the session creator's config (visible_device_list = str({local_rank}))"))


def _file_writing_hooks(ctx, chief_only: Set[cst.CSTNode]) -> None:
    """CheckpointSaverHook, SummarySaverHook...: on rank 0 only."""
    a = ctx.a
    for c in a.calls:
        if not a.is_name(c, tf1_train_ops.FILE_WRITING_HOOKS):
            continue
        what = f"{a.code(c.func)} runs on rank 0 only"
        par = a.parent(c)
        if isinstance(par, cst.Element) and isinstance(a.parent(par), cst.List):
            if a.parent(par) not in chief_only:
                _guard_element(ctx, par)
                ctx.change(c, "rank0-io", what)
            continue
        if isinstance(par, cst.Arg) and _guard_append(ctx, c, a.parent(par)):
            continue
        uses = _element_uses(a, c)
        if uses is not None:
            # Some hooks open their writer when built (ProfilerHook): build it on rank 0 only.
            new = ctx.expr(f"{source(a.module, c)} if {ctx.backend.is_chief()} else None")
            ctx.plan.replace(c, lambda old, new=new: new)
            ctx.change(c, "rank0-io", f"{a.code(c.func)} built on rank 0 only (None elsewhere)")
            for elem in uses:
                if a.parent(elem) not in chief_only:
                    _guard_element(ctx, elem)
                    ctx.change(elem, "rank0-io", what)
            continue
        ctx.warn(c, "rank0-io", ctx.say("{hook} writes files: run it on rank 0 only ({chief}) by hand", hook=a.code(c.func)))


def _guard_element(ctx, elem: cst.Element) -> None:
    """``[a, X, b]`` -> ``[a, *([X] if hvd.rank() == 0 else []), b]``."""
    chief = ctx.backend.is_chief()

    def starred(upd):
        inner = ctx.module.code_for_node(upd.value)
        return cst.StarredElement(value=ctx.expr(f"([{inner}] if {chief} else [])"), comma=upd.comma)

    ctx.plan.replace(elem, starred)


def _guard_append(ctx, hook: cst.Call, owner) -> bool:
    """``hooks.append(X)`` alone on its line goes under ``if hvd.rank() == 0:``."""
    a = ctx.a
    stmt = a.statement_of(hook)
    if not (isinstance(owner, cst.Call) and method_name(owner) == "append" and isinstance(stmt, cst.SimpleStatementLine)
            and len(stmt.body) == 1 and isinstance(stmt.body[0], cst.Expr) and stmt.body[0].value is owner):
        return False
    if ctx.plan.guard(stmt, ctx.expr(ctx.backend.is_chief())):
        ctx.change(hook, "rank0-io", f"{a.code(hook.func)} runs on rank 0 only")
    return True


def _element_uses(a: A.Analysis, hook: cst.Call):
    """``h = Hook(...)`` whose every use is an element of a list literal: those elements."""
    par = a.parent(hook)
    if not (isinstance(par, cst.Assign) and len(par.targets) == 1 and isinstance(par.targets[0].target, cst.Name)):
        return None
    name = par.targets[0].target
    out = []
    for binding in a.scopes.lookup(name):
        if binding.node is not name:
            continue
        for access in a.scopes.references(name):
            elem = a.parent(access)
            if not (isinstance(elem, cst.Element) and isinstance(a.parent(elem), cst.List)):
                return None
            out.append(elem)
    return out or None


@register
class Tf1MonitoredSession(Rule):
    id = "tf1-monitored-session"
    description = "TF1 MonitoredTrainingSession under Horovod: the broadcast hook, checkpoints and summaries on rank 0 only, one GPU per process, StopAtStepHook steps divided."
    engines = ('horovod',)
    kinds = ('broadcast', 'data-division', 'distributed-optimizer', 'gpu-pinning', 'lr-scaling', 'lr-warmup', 'rank0-io')
    refuses = "scripts already distributed with parameter servers; gradients applied that the optimizer did not compute"
    example = "monitored_session/no_hooks"
    order = 40
    PATTERN = PATTERN

    def detect(self, a):
        return detect(a)

    def apply(self, ctx) -> None:
        apply(ctx)
