"""--warmup-epochs K: gradual learning-rate warmup (Goyal et al., "Accurate,
Large Minibatch SGD", 2017). The scaled rate (--lr-scaling linear or sqrt) is
reached linearly, step by step, from the single-process rate over the first
K epochs: a rate N times larger from the first step can diverge.

What is done (the backend says how): Keras fit() gets a warmup callback
after the engine's own callbacks. Other training loops are refused for now:
their number of steps per epoch is not something fit() hands over at run
time, and a warmup over a guessed number of steps would be wrong silently.
"""
from __future__ import annotations

import libcst as cst

from ..engine.context import Unsupported
from .common import method_name, receiver

RULE = "lr-warmup"


def _state(ctx) -> dict:
    return ctx.state(__name__, dict)


def phrase(ctx) -> str:
    """What the warmup does to a rate, for the report ('' without a warmup)."""
    k = ctx.backend.warmup_epochs
    if not k:
        return ""
    return (f", reached by a linear warmup from the rate as written over the first {k} "
            f"epoch{'s' if k > 1 else ''} (--warmup-epochs {k})")


def _plain(node) -> bool:
    """A name or a dotted attribute of names (evaluated again without effect)."""
    while isinstance(node, cst.Attribute):
        node = node.value
    return isinstance(node, cst.Name)


def fit_callbacks(ctx, call: cst.Call) -> list:
    """Callback templates fit() ``call`` gets for the warmup (after the
    engine's own callbacks); also schedules the class they need."""
    if not ctx.backend.warmup_epochs:
        return []
    model = receiver(call)
    template, class_template = ctx.backend.keras_warmup_callback(
        ctx, ctx.a.code(model) if model is not None and _plain(model) else None)
    if class_template is not None:
        _emit_class(ctx, call, class_template)
    _state(ctx).setdefault("fits", []).append(call)
    k = ctx.backend.warmup_epochs
    ctx.change(call, RULE, f"{method_name(call)}() warms the learning rate up from the rate as written to the "
                           f"scaled one over its first {k} epoch{'s' if k > 1 else ''}, linearly per step "
                           f"(--warmup-epochs {k}, --lr-scaling {ctx.backend.lr_scaling}): "
                           f"{ctx.fill(template).split('(')[0]}")
    return [template]


def _emit_class(ctx, call: cst.Call, template: str) -> None:
    if _state(ctx).get("class"):
        return
    _state(ctx)["class"] = True
    a = ctx.a
    anchor = a.statement_of(call)
    while anchor is not None and a.parent(anchor) is not a.module:
        anchor = a.statement_of(a.parent(anchor))
    body = ctx.stmts(template, comment=ctx.say("{engine}: learning-rate warmup (--warmup-epochs)."))
    body[0] = body[0].with_changes(leading_lines=[cst.EmptyLine(), cst.EmptyLine(), *body[0].leading_lines])
    ctx.plan.insert_before(anchor, body)


def note_schedule(ctx, schedule: cst.Call) -> None:
    """A learning-rate schedule feeds an optimizer: fit()'s warmup cannot set its rate."""
    _state(ctx).setdefault("schedules", []).append(schedule)


def apply(ctx) -> None:
    k = ctx.backend.warmup_epochs
    if not k:
        return
    others = sorted(ctx.patterns - {"Keras"})
    if others:
        raise Unsupported(1, f"--warmup-epochs is applied to Keras fit() only so far, not to {', '.join(others)} "
                             f"training (its steps per epoch are not known to the converter): convert without "
                             f"--warmup-epochs and ramp the rate by hand over the first {k} epoch(s)")
    schedules = _state(ctx).get("schedules")
    if schedules and _state(ctx).get("fits"):
        raise ctx.unsupported(schedules[0], "--warmup-epochs with a learning-rate schedule in Keras fit(): the "
                                            "warmup callback sets the optimizer's rate, which a schedule computes "
                                            "itself; convert without --warmup-epochs, or warm the schedule up by hand")
