"""Experiment trackers and progress bars report from one process only.

Every process of a distributed run executes the script's ``wandb.init()``,
``mlflow.log_metric(...)`` and ``tqdm(...)``: left alone, N processes open N
tracker runs (N curves for one training, the same artifacts uploaded N
times) and draw N progress bars over each other. A tracker that can start a
run logging nothing (``apis.TRACKER_QUIET_RUNS``: ``wandb.init(mode=
"disabled")``) starts it so on the other ranks: its config stays readable
there and every log, summary and callback of that run does nothing, with no
other edit. A tracker with no such mode (MLflow) has its logging calls run on
rank 0 only (``apis.TRACKER_RANK0_FUNCTIONS``), and a run it opens in a
``with`` statement is a null context elsewhere. Progress bars are turned off
on the other ranks by their own keyword (``apis.PROGRESS_BARS``). A sweep
agent, which asks a server for each run's settings, would hand every rank
different settings: it is warned (``apis.TRACKER_SWEEP_AGENTS``).
"""
from __future__ import annotations

import libcst as cst
from .. import apis
from ..engine import analysis as A
from ..engine.scopes import walk
from ..actions.guards import guard_call
from ..actions.keywords import keyword_free
from ..facts.syntax import append_arg, find_arg, kwarg, source
from ..facts import kinds
from ..engine.rule import Rule, register


RULE = kinds.RANK0_IO


def apply(ctx) -> None:
    a = ctx.a
    # Engines whose workers each run fit()'s callbacks with files of their
    # own (tf.distribute) keep every callback; there a reporting callback
    # is dropped from the list off rank 0 here. (Horovod's fit rule runs
    # apis.KERAS_RANK0_CALLBACKS, these included, on rank 0 only.)
    every_worker = ctx.backend.worker_write_path("path") is not None
    for call in a.calls:
        if every_worker and a.is_name(call, apis.TRACKER_KERAS_CALLBACKS - apis.TRACKER_CHECKPOINT_CALLBACKS):
            _callback_on_chief(ctx, call)
            continue
        quiet = a.is_name(call, apis.TRACKER_QUIET_RUNS)
        if quiet is not None:
            _quiet_elsewhere(ctx, call, quiet)
            continue
        bar = a.is_name(call, apis.PROGRESS_BARS)
        if bar is not None:
            _bar_off_elsewhere(ctx, call, apis.PROGRESS_BARS[bar])
            continue
        agent = a.is_name(call, apis.TRACKER_SWEEP_AGENTS)
        if agent is not None:
            ctx.warn(call, "data-division", ctx.say(
                "{agent}() runs a sweep whose server hands each agent the settings of its next run: every "
                "process would ask for its own and train a different model, their gradients averaged together; "
                "start the agent on one process and hand the same settings to every process by hand "
                "(e.g. run the sweep on one process, then launch the converted script with its best settings)",
                agent=a.code(call.func)))
            continue
        run = a.is_name(call, apis.TRACKER_RUN_CONTEXTS)
        if run is not None and isinstance(a.parent(call), cst.WithItem):
            _null_context_elsewhere(ctx, call)
        elif run is not None or a.is_name(call, apis.TRACKER_RANK0_FUNCTIONS) is not None:
            if _result_used(a, call):
                ctx.warn(call, RULE, ctx.say(
                    "{call}() logs to a tracker, and what it returns is used later: run the logging on {chief} "
                    "only by hand, and give the other processes a value of their own", call=a.code(call.func)))
            else:
                guard_call(ctx, call, f"{a.code(call.func)}()")


def _callback_on_chief(ctx, call: cst.Call) -> None:
    """``[..., MlflowCallback(), ...]`` -> ``[..., *([MlflowCallback()] if
    <chief> else []), ...]``: the list keeps its other callbacks everywhere."""
    a = ctx.a
    element = a.parent(call)
    if not isinstance(element, cst.Element) or not isinstance(a.parent(element), cst.List):
        ctx.warn(call, RULE, ctx.say(
            "{call}() reports from every worker: give it to fit() on {chief} only, by hand "
            "(callbacks=[...] + ([{call}(...)] if {chief} else []))", call=a.code(call.func)))
        return
    new = ctx.expr(f"[{{c}}] if {ctx.backend.is_chief()} else []", c=source(ctx.module, call))
    new = new.with_changes(lpar=[cst.LeftParen()], rpar=[cst.RightParen()])  # a starred conditional needs them
    ctx.plan.replace(element, lambda old: cst.StarredElement(value=new, comma=old.comma))
    ctx.change(call, RULE, f"{a.code(call.func)}() runs on rank 0 only")


def _quiet_elsewhere(ctx, call: cst.Call, name: str) -> None:
    """``wandb.init(...)`` -> ``wandb.init(..., mode=None if <chief> else
    "disabled")``: the run logs on the chief only."""
    keyword, quiet, default = apis.TRACKER_QUIET_RUNS[name]
    chief = ctx.backend.is_chief()
    if _set_per_rank(ctx, call, keyword, f"{default} if {chief} else {quiet}", f"{{v}} if {chief} else {quiet}"):
        ctx.change(call, RULE, ctx.say(
            "{call}(): the tracker run logs from rank 0 only ({keyword}={quiet} elsewhere: its config is still "
            "read there, and its logs, summaries and callbacks do nothing)",
            call=ctx.a.code(call.func), keyword=keyword, quiet=quiet))


def _bar_off_elsewhere(ctx, call: cst.Call, keyword: str) -> None:
    """``tqdm(x)`` -> ``tqdm(x, disable=not <chief>)``; a given
    ``disable=d`` becomes ``disable=(d) or not <chief>``."""
    off = ctx.backend.is_not_chief()
    if _set_per_rank(ctx, call, keyword, off, f"({{v}}) or {off}"):
        ctx.change(call, RULE, "progress bar shown on rank 0 only")


def _set_per_rank(ctx, call: cst.Call, keyword: str, absent: str, given: str) -> bool:
    """Give ``call`` the keyword ``absent`` when it has none, or rewrite the
    value it has by ``given`` (``{v}``: that value). The edit is the call's
    own (``inner``): a rule wrapping the call keeps it (a rank's share of a
    bar's stream). False (warned) when a ``**mapping`` may pass it already."""
    arg = find_arg(call, keyword)
    if arg is None:
        if not keyword_free(ctx, call, keyword, ctx.fill(absent), RULE):
            return False
        new = ctx.expr(absent)
        ctx.plan.replace(call, lambda c: append_arg(c, kwarg(keyword, new)), inner=True)
    else:
        new = ctx.expr(given, v=source(ctx.module, arg.value))
        ctx.plan.replace(arg.value, lambda old: new)
    return True


def _null_context_elsewhere(ctx, call: cst.Call) -> None:
    """``with mlflow.start_run():`` -> ``with (mlflow.start_run() if <chief>
    else contextlib.nullcontext()):``: the block runs on every process (it
    trains), the run opens on the chief only. Its ``as`` target would be
    None elsewhere: if the block uses it, warn instead."""
    a = ctx.a
    item = a.parent(call)
    target = item.asname.name if item.asname is not None else None
    if target is not None and _target_used(a, target):
        ctx.warn(call, RULE, ctx.say(
            "{call}() opens a tracker run on every process, and the block uses {name}: open it on {chief} only "
            "by hand (a contextlib.nullcontext() elsewhere) and keep the other processes off {name}",
            call=a.code(call.func), name=a.code(target)))
        return
    contextlib = ctx.imports.require("contextlib", "contextlib")
    new = ctx.expr(f"({{c}} if {ctx.backend.is_chief()} else {contextlib}.nullcontext())",
                   c=source(ctx.module, call))
    ctx.plan.replace(call, lambda old: new)
    ctx.change(call, RULE, f"{a.code(call.func)}(): the tracker run is opened on rank 0 only (a null context elsewhere)")


def _result_used(a: A.Analysis, call: cst.Call) -> bool:
    """What the call returns is bound to a name read later."""
    stmt = a.statement_of(call)
    small = stmt.body[0] if isinstance(stmt, cst.SimpleStatementLine) and len(stmt.body) == 1 else None
    if not isinstance(small, cst.Assign) or small.value is not call:
        return False
    return any(_target_used(a, t.target) for t in small.targets)


def _target_used(a: A.Analysis, target) -> bool:
    names = [n for n in walk(target) if isinstance(n, cst.Name)]
    return any(a.scopes.references(n) for n in names)


@register
class Trackers(Rule):
    id = "trackers"
    description = "Experiment trackers (wandb, MLflow...) and progress bars report from one process only."
    engines = ('horovod', 'tf-distribute')
    kinds = ('rank0-io',)
    refuses = ""
    example = "keras/trackers_wandb_mlflow_tqdm"
    order = 60

    def apply(self, ctx) -> None:
        apply(ctx)
