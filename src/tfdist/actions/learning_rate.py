"""Scaling a learning rate by the number of processes (linear or square root), schedules included.

Learning rate x number of processes (Horovod's linear scaling rule), or
the policy the backend was given (--lr-scaling sqrt / none).

Works on an optimizer construction wherever it is: the learning rate given
positionally, as ``learning_rate=``/``lr=``, as a name, a tensor, or a
schedule (then the schedule's initial rate is scaled where the schedule is
built); absent, the optimizer's documented default is written out, scaled.

A schedule counted in optimizer steps (``decay_steps``, ``boundaries``; Keras
schedules and TF1 decay functions, ``apis.STEP_KEYED_SCHEDULE_ARGS``) gets
those counts divided by the number of processes: each takes 1/N of the
steps, and the schedule must decay at the same share of the data.
"""
from __future__ import annotations

from typing import Optional
import libcst as cst
from .. import apis
from ..engine import analysis as A
from .keywords import keyword_free
from ..facts.learning_rates import RULE, default_lr, divided_schedules, own_optimizer_rate, policy_phrase, run_time_scalings, scaled_constructions, schedule_calls
from ..facts.syntax import append_arg, find_arg, kwarg, source
from ..facts import warmups


def scale_optimizer_lr(ctx, call: cst.Call, class_name: str) -> bool:
    """Schedule the scaling of the learning rate of an optimizer construction
    (once, however many rules reach the same construction)."""
    a = ctx.a
    if call in scaled_constructions(ctx):
        return True
    scaled_constructions(ctx).add(call)
    known = class_name in apis.KERAS_OPTIMIZERS or class_name in apis.KERAS_LEGACY_OPTIMIZERS or class_name in apis.TF1_OPTIMIZERS
    own = None if known else own_optimizer_rate(a, call)
    position = 0 if known else own[1] if own is not None else None
    # the rate the optimizer reads: learning_rate= or the first positional argument, over a second ``lr=``
    arg = find_arg(call, "learning_rate", position) or find_arg(call, apis.LEARNING_RATE_KEYWORDS, position)
    if arg is not None and arg.keyword is not None and arg.keyword.value == "lr" \
            and class_name in apis.KERAS_OPTIMIZERS and find_arg(call, "learning_rate", 0) is None:
        return _ignored_lr(ctx, call, class_name, arg)
    if arg is None:
        if own is not None and own[2] is not None:
            return _write_out_rate(ctx, call, own[0], own[2])
        if not known:
            ctx.warn(call, RULE, f"cannot tell the learning rate of {a.code(call.func)}(...): multiply it by the number of processes by hand")
            return False
        lr = default_lr(class_name)
        if lr is None:
            ctx.warn(call, RULE, f"{a.code(call.func)}(...) has no learning rate argument")
            return False
        text = ctx.backend.scale_lr(repr(lr))
        if text is None:
            ctx.change(call, RULE, f"learning rate (default {lr}) {policy_phrase(ctx)}")
            return True
        if not keyword_free(ctx, call, "learning_rate", ctx.fill(text), RULE):
            return False
        scaled = ctx.expr(text)
        ctx.plan.replace(call, lambda c: append_arg(c, kwarg("learning_rate", scaled)))
        ctx.change(call, RULE, f"learning rate (default {lr}) {policy_phrase(ctx)}")
        return True
    return scale_value(ctx, arg.value, call)


def _ignored_lr(ctx, call: cst.Call, class_name: str, arg: cst.Arg) -> bool:
    """``Adam(lr=0.01)``: since TensorFlow 2.11 Keras's optimizers ignore
    ``lr`` (with a warning; tf-keras too) and train at their default rate,
    and Keras 3 rejects it (measured: TF 2.15 and tf-keras 2.21 both give
    0.001). The rate the script trains at is the default: that one is
    scaled, written out as ``learning_rate=`` (which wins over ``lr``), and
    the ignored ``lr`` is warned with the edit."""
    a = ctx.a
    lr = default_lr(class_name)
    if lr is None:
        return False
    ctx.warn(arg.value, RULE, (
        f"{a.code(call.func)}(lr={a.code(arg.value)}): Keras optimizers ignore lr since TensorFlow 2.11 (it trains "
        f"at the default {lr}; Keras 3 rejects lr=), so the default is the rate scaled here; if "
        f"{a.code(arg.value)} is the rate meant, write learning_rate={a.code(arg.value)} and convert again"))
    text = ctx.backend.scale_lr(repr(lr))
    if text is None:
        ctx.change(call, RULE, f"learning rate (default {lr}, lr= being ignored) {policy_phrase(ctx)}")
        return True
    if not keyword_free(ctx, call, "learning_rate", ctx.fill(text), RULE):
        return False
    scaled = ctx.expr(text)
    ctx.plan.replace(call, lambda c: append_arg(c, kwarg("learning_rate", scaled)))
    ctx.change(call, RULE, f"learning rate (default {lr}, lr= being ignored) {policy_phrase(ctx)}")
    return True


def _write_out_rate(ctx, call: cst.Call, keyword: str, default: cst.BaseExpression) -> bool:
    """An optimizer class of the script's own, called without its rate: the
    default of its constructor's rate parameter, written out scaled."""
    a = ctx.a
    text = ctx.backend.scale_lr(a.code(default))
    if text is None:
        ctx.change(call, RULE, f"learning rate (default {a.code(default)}) {policy_phrase(ctx)}")
        return True
    if not keyword_free(ctx, call, keyword, ctx.fill(text), RULE):
        return False
    scaled = ctx.expr(text)
    ctx.plan.replace(call, lambda c: append_arg(c, kwarg(keyword, scaled)))
    ctx.change(call, RULE, f"learning rate (default {a.code(default)} of {a.code(call.func)}) {policy_phrase(ctx)}")
    return True


def scale_value(ctx, value: cst.BaseExpression, where: cst.CSTNode) -> bool:
    a = ctx.a
    for call in schedule_calls(a, value):
        divide_schedule_steps(ctx, call)
    schedules = [t for t in a.types(value) if t.kind == A.SCHEDULE and t.call is not None]
    if schedules:
        for t in schedules:
            warmups.note_schedule(ctx, t.call)
        done = False
        for t in schedules:
            done |= _scale_schedule(ctx, t)
        return done
    text = ctx.backend.scale_lr(source(a.module, value))
    if text is not None:
        new = ctx.expr(text)
        ctx.plan.replace(value, lambda old: new.with_changes(lpar=old.lpar, rpar=old.rpar) if old.lpar else new)
    ctx.change(value, RULE, f"learning rate {a.code(value)} {policy_phrase(ctx)}")
    return True


def divide_schedule_steps(ctx, call: cst.Call) -> None:
    """Divide the step counts of a step-keyed schedule by the number of
    processes (once per schedule, however many optimizers use it)."""
    a = ctx.a
    name = a.is_name(call, apis.STEP_KEYED_SCHEDULE_ARGS)
    if name is None or call in divided_schedules(ctx):
        return
    divided_schedules(ctx).add(call)
    short = name.rsplit(".", 1)[1]
    for keyword, position in apis.STEP_KEYED_SCHEDULE_ARGS[name]:
        arg = find_arg(call, keyword, position)
        if arg is None:
            continue
        if keyword == "boundaries":
            piece = ctx.backend.divide_count("b")
            new = ctx.expr(f"[{piece} for b in {source(a.module, arg.value, False)}]")
        else:
            new = ctx.expr(ctx.backend.divide_count(source(a.module, arg.value)))
        ctx.plan.replace(arg.value, lambda old, new=new: new)
        ctx.change(arg.value, RULE, ctx.say(
            "{short} {keyword} {value} divided by {size}: each process takes 1/N of the steps, so the "
            "schedule changes the rate at the same share of the data", short=short, keyword=keyword,
            value=a.code(arg.value)))


def _scale_schedule(ctx, t: A.Type) -> bool:
    divide_schedule_steps(ctx, t.call)
    spec = apis.KERAS_LR_SCHEDULES.get(t.name)
    if spec is None:
        return _wrap_user_schedule(ctx, t)
    keyword, position = spec
    arg = find_arg(t.call, keyword, position)
    if arg is None:
        ctx.warn(t.call, RULE, f"cannot find {keyword} of {t.name}")
        return False
    if keyword == "values":  # PiecewiseConstantDecay: every piece is a rate
        piece = ctx.backend.scale_lr("v")
        if piece is not None:
            new = ctx.expr(f"[{piece} for v in {source(ctx.a.module, arg.value, False)}]")
            ctx.plan.replace(arg.value, lambda old: new)
        ctx.change(arg.value, RULE, f"every rate of the piecewise schedule {policy_phrase(ctx)}")
        return True
    return scale_value(ctx, arg.value, t.call)


def _wrap_user_schedule(ctx, t: A.Type) -> bool:
    """A schedule class of the script's own (``class CustomSchedule(
    LearningRateSchedule)``): its code is not rewritten; the schedule it
    builds is wrapped at its construction, its rate times the policy's
    factor at N times its step -- what scaling the rate and dividing the
    step counts of a Keras schedule amounts to, whatever its formula."""
    if ctx.backend.warmup_epochs:
        ctx.warn(t.call, RULE, f"learning-rate schedule {t.name} is user-defined and --warmup-epochs ramps only "
                               "rates tfdist scales where they are built: scale its rates by the number of "
                               "processes, and divide any step counts in it by that number, by hand")
        return False
    if t.call in scaled_constructions(ctx):
        return True
    scaled_constructions(ctx).add(t.call)
    template, definition = ctx.backend.scale_user_schedule(ctx, warmups.keras_module(ctx))
    if definition is not None:
        ctx.define(definition, ctx.say("{engine}: a learning-rate schedule of the script's own, scaled."))
    ctx.plan.replace(t.call, lambda upd: ctx.expr(template, inner=source(ctx.module, upd, False)))
    ctx.change(t.call, RULE, ctx.say("learning-rate schedule {name} (the script's own class) {policy}, read {size} "
                                     "times as far along its steps: each process takes 1/N of them, so the "
                                     "rate changes at the same share of the data", name=t.name,
                                     policy=policy_phrase(ctx)))
    return True


def scale_at_run_time(ctx, value: cst.BaseExpression, keras: str, when: str = "when compile() runs") -> Optional[str]:
    """A call template over ``{inner}`` scaling, when it runs, the learning
    rate of the optimizer object ``value`` is (built where the converter
    cannot see), once per object; the backend's helper is written into the
    module the first time. None under --lr-scaling none."""
    made = ctx.backend.scale_lr_at_run_time(ctx, keras) if "call" not in run_time_scalings(ctx) else None
    if made is not None:
        run_time_scalings(ctx)["call"], definitions = made
        ctx.define(definitions, ctx.say("{engine}: the learning rate of an optimizer built where the converter cannot see."))
    call = run_time_scalings(ctx).get("call")
    if call is not None:
        ctx.change(value, RULE, f"learning rate of {ctx.a.code(value)} (built where tfdist cannot see) "
                                f"{policy_phrase(ctx)} {when}, once per optimizer: "
                                f"{ctx.fill(call, inner=ctx.a.code(value))}")
    return call


def scale_epoch_schedulers(ctx) -> None:
    """A LearningRateScheduler sets the optimizer's rate every epoch from the
    script's function, replacing the scaled rate: its function's rates are
    scaled in turn, by a wrapper written into the module once."""
    a = ctx.a
    state = run_time_scalings(ctx)
    for call in a.calls:
        name = a.is_name(call, apis.KERAS_EPOCH_RATE_CALLBACKS)
        if name is None:
            continue
        keyword, position = apis.KERAS_EPOCH_RATE_CALLBACKS[name]
        arg = find_arg(call, keyword, position)
        if arg is None:
            continue
        if "epoch" not in state:
            made = ctx.backend.scale_epoch_rates(ctx)
            if made is None:
                return  # --lr-scaling none
            state["epoch"], definition = made
            ctx.define(definition, ctx.say("{engine}: the rates a LearningRateScheduler sets, scaled as the "
                                           "optimizer's was."))
        template = state["epoch"]
        ctx.plan.replace(arg.value, lambda upd, template=template: ctx.expr(
            template, inner=ctx.module.code_for_node(upd)))
        ctx.change(arg.value, RULE, f"{a.code(call.func)}: the rates {a.code(arg.value)} sets each epoch replace "
                                    f"the scaled one, so they are {policy_phrase(ctx)} too")
        verbose = find_arg(call, "verbose", 1)
        if verbose is not None and not (isinstance(verbose.value, cst.Integer) and verbose.value.value == "0"):
            # it prints the rate it sets, on every process
            new = ctx.expr(f"{{v}} if {ctx.backend.is_chief()} else 0", v=source(a.module, verbose.value))
            ctx.plan.replace(verbose.value, lambda old, new=new: new)
            ctx.change(verbose.value, "rank0-output", f"{a.code(call.func)} prints the rates it sets on rank 0 only")
