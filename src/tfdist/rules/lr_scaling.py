"""Learning rate x number of processes (Horovod's linear scaling rule), or
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

from . import kinds

from typing import Optional

import libcst as cst

from .. import apis
from ..engine import analysis as A
from . import warmup
from .common import append_arg, find_arg, keyword_free, kwarg, source

RULE = kinds.LR_SCALING


def _scaled(ctx) -> set:
    """Optimizer constructions already scaled (per conversion), however many rules reach them."""
    return ctx.state(__name__ + ".scaled")


def default_lr(name: str) -> Optional[float]:
    if name in apis.KERAS_OPTIMIZERS:
        return apis.KERAS_OPTIMIZERS[name]
    if name in apis.KERAS_LEGACY_OPTIMIZERS:
        return apis.KERAS_LEGACY_OPTIMIZERS[name]
    return apis.TF1_OPTIMIZERS.get(name)


def scale_optimizer_lr(ctx, call: cst.Call, class_name: str) -> bool:
    """Schedule the scaling of the learning rate of an optimizer construction
    (once, however many rules reach the same construction)."""
    a = ctx.a
    if call in _scaled(ctx):
        return True
    _scaled(ctx).add(call)
    known = class_name in apis.KERAS_OPTIMIZERS or class_name in apis.KERAS_LEGACY_OPTIMIZERS or class_name in apis.TF1_OPTIMIZERS
    own = None if known else own_optimizer_rate(a, call)
    position = 0 if known else own[1] if own is not None else None
    arg = find_arg(call, apis.LEARNING_RATE_KEYWORDS, position)
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


def own_optimizer_rate(a: A.Analysis, call: cst.Call):
    """(parameter name, positional index, literal default or None) of the
    learning-rate parameter of an optimizer class of this file, when its
    constructor hands that parameter on as the rate: to the base class
    (``super().__init__(learning_rate=learning_rate)``) or as the
    ``"learning_rate"`` hyperparameter (``self._set_hyper("learning_rate",
    learning_rate)``); None otherwise."""
    fact = a.class_of(call.func)
    if fact is None or fact.node is None:
        return None
    inits = a.class_methods(fact.node, "__init__")
    if len(inits) != 1:
        return None
    init = inits[0]
    params = list(init.params.params)
    for index, param in enumerate(params):
        if param.name.value not in apis.LEARNING_RATE_KEYWORDS or not _hands_on_rate(init, param.name.value):
            continue
        default = param.default if param.default is not None and _is_number(param.default) else None
        return param.name.value, index - 1, default
    return None


def _hands_on_rate(init: cst.FunctionDef, name: str) -> bool:
    from ..engine.scopes import walk

    def reads(node) -> bool:
        return any(isinstance(n, cst.Name) and n.value == name for n in walk(node))

    for node in walk(init.body):
        if not isinstance(node, cst.Call):
            continue
        for arg in node.args:
            if arg.keyword is not None and arg.keyword.value in apis.LEARNING_RATE_KEYWORDS and reads(arg.value):
                return True
        first = node.args[0].value if node.args else None
        if isinstance(first, cst.SimpleString) and first.evaluated_value in apis.LEARNING_RATE_KEYWORDS \
                and any(reads(arg.value) for arg in node.args[1:]):
            return True
    return False


def _is_number(value) -> bool:
    if isinstance(value, cst.UnaryOperation) and isinstance(value.operator, cst.Minus):
        value = value.expression
    return isinstance(value, (cst.Integer, cst.Float))


def scale_value(ctx, value: cst.BaseExpression, where: cst.CSTNode) -> bool:
    a = ctx.a
    for call in _schedule_calls(a, value):
        divide_schedule_steps(ctx, call)
    schedules = [t for t in a.types(value) if t.kind == A.SCHEDULE and t.call is not None]
    if schedules:
        for t in schedules:
            warmup.note_schedule(ctx, t.call)
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


def _schedule_calls(a, value) -> list:
    """Step-keyed schedule calls a learning rate is: the call itself, or the
    value of every binding of a name (through plain assignments only)."""
    if isinstance(value, cst.Call):
        return [value] if a.is_name(value, apis.STEP_KEYED_SCHEDULE_ARGS) else []
    if isinstance(value, cst.Name):
        bound = a.assigned_values(value)
        if bound and all(v is not None for _, v in bound):
            return [v for _, v in bound if isinstance(v, cst.Call) and a.is_name(v, apis.STEP_KEYED_SCHEDULE_ARGS)]
    return []


def _divided(ctx) -> set:
    """Schedule calls whose step counts were divided (per conversion)."""
    return ctx.state(__name__ + ".divided")


def divide_schedule_steps(ctx, call: cst.Call) -> None:
    """Divide the step counts of a step-keyed schedule by the number of
    processes (once per schedule, however many optimizers use it)."""
    a = ctx.a
    name = a.is_name(call, apis.STEP_KEYED_SCHEDULE_ARGS)
    if name is None or call in _divided(ctx):
        return
    _divided(ctx).add(call)
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


def policy_phrase(ctx) -> str:
    """What was done to a learning rate, naming a policy other than the default."""
    policy = ctx.backend.lr_scaling
    if policy == "linear":
        return "scaled by the number of processes" + warmup.phrase(ctx)
    if policy == "sqrt":
        return "scaled by the square root of the number of processes (--lr-scaling sqrt)" + warmup.phrase(ctx)
    return "kept as written (--lr-scaling none)"


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
    if t.call in _scaled(ctx):
        return True
    _scaled(ctx).add(t.call)
    template, definition = ctx.backend.scale_user_schedule(ctx, warmup.keras_module(ctx))
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
    made = ctx.backend.scale_lr_at_run_time(ctx, keras) if "call" not in _run_time(ctx) else None
    if made is not None:
        _run_time(ctx)["call"], definitions = made
        ctx.define(definitions, ctx.say("{engine}: the learning rate of an optimizer built where the converter cannot see."))
    call = _run_time(ctx).get("call")
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
    state = _run_time(ctx)
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


def _run_time(ctx) -> dict:
    return ctx.state(__name__ + ".run_time", dict)
