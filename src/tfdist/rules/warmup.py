"""--warmup-epochs K: gradual learning-rate warmup (Goyal et al., "Accurate,
Large Minibatch SGD", 2017). The scaled rate (--lr-scaling linear or sqrt) is
reached linearly, step by step, from the single-process rate over the first
K epochs: a rate N times larger from the first step can diverge.

What must happen (the backend says how):

- Keras fit(): a warmup callback after the engine's own callbacks; fit()
  hands it its steps per epoch at run time. A rate that is the script's
  own schedule cannot be set by a callback: the schedule is wrapped as for
  tape loops, and a callback tells the wrapper fit()'s steps per epoch.
- GradientTape loops: the optimizer's rate -- the scaled number or the
  script's own (scaled) schedule -- becomes a schedule around it that warms
  it up over K epochs of this process's steps. The epoch length is this
  process's batches of the dataset the step loop iterates inside an epoch
  loop, set right before that loop; where the converter cannot see an
  epoch, --steps-per-epoch S (the original's steps per epoch) gives it.
- TF1 loops: the same around the rate tensor, counted by the global step
  minimize() increments; their epochs are never visible to the converter
  (the graph is built before any loop runs), so --steps-per-epoch is needed.

Anything else is refused with the line and the option to use: a warmup
over a guessed number of steps would be wrong silently.
"""
from __future__ import annotations

from . import kinds

from typing import Optional

import libcst as cst

from .. import apis
from ..engine import analysis as A
from ..engine import dataflow
from .common import find_arg, method_name, receiver, source

RULE = kinds.LR_WARMUP
#: What to do where the converter cannot see an epoch.
GIVE_STEPS = ("convert with --steps-per-epoch S as well, S being the original script's optimizer steps per epoch "
              "(samples / batch size)")


def _state(ctx) -> dict:
    return ctx.state(__name__, dict)


def phrase(ctx) -> str:
    """What the warmup does to a rate, for the report ('' without a warmup)."""
    k = ctx.backend.warmup_epochs
    if not k:
        return ""
    return (f", reached by a linear warmup from the rate as written over the first {k} "
            f"epoch{'s' if k > 1 else ''} (--warmup-epochs {k})")


def _epochs(k: int) -> str:
    return f"{k} epoch{'s' if k > 1 else ''}"


def _plain(node) -> bool:
    """A name or a dotted attribute of names (evaluated again without effect)."""
    while isinstance(node, cst.Attribute):
        node = node.value
    return isinstance(node, cst.Name)


# ------------------------------------------------------------------ Keras fit
def fit_callbacks(ctx, call: cst.Call) -> list:
    """Callback templates fit() ``call`` gets for the warmup (after the
    engine's own callbacks); also schedules the class they need."""
    if not ctx.backend.warmup_epochs:
        return []
    model = receiver(call)
    if _state(ctx).get("fit_schedule_optimizers"):
        if _state(ctx).get("fit_plain_rate"):
            raise ctx.unsupported(call, "--warmup-epochs: this file's fit() optimizers mix a learning-rate schedule "
                                        "and a plain rate, warmed up in two different ways; convert without "
                                        "--warmup-epochs, or warm them up by hand")
        template, class_template = ctx.backend.warmup_epoch_callback(ctx, keras_module(ctx), _state(ctx)["schedule"])
    else:
        template, class_template = ctx.backend.keras_warmup_callback(
            ctx, ctx.a.code(model) if model is not None and _plain(model) else None)
    if class_template is not None:
        _emit_once(ctx, "callback_class", class_template)
    _state(ctx).setdefault("fits", []).append(call)
    k = ctx.backend.warmup_epochs
    ctx.change(call, RULE, f"{method_name(call)}() warms the learning rate up from the rate as written to the "
                           f"scaled one over its first {_epochs(k)}, linearly per step "
                           f"(--warmup-epochs {k}, --lr-scaling {ctx.backend.lr_scaling}): "
                           f"{ctx.fill(template).split('(')[0]}")
    return [template]


def _emit_once(ctx, key: str, template: str) -> None:
    """A class or function the warmup needs, once per file, at module level
    after the start-up code."""
    if _state(ctx).get(key):
        return
    _state(ctx)[key] = True
    ctx.define(template, ctx.say("{engine}: learning-rate warmup (--warmup-epochs)."))


def _helper(ctx, key: str, make) -> str:
    """The name of a helper the backend writes (``make() -> (name,
    template)``), written into the module the first time it is asked for."""
    if key not in _state(ctx):
        name, template = make()
        _emit_once(ctx, key + " written", template)
        _state(ctx)[key] = name
    return _state(ctx)[key]


def keras_module(ctx) -> str:
    """The Keras module the file uses, as a template."""
    return "{keras}" if ctx.facts.get("keras_flavor") == "keras" else "{tf}.keras"


def note_fit_optimizer(ctx, call: cst.Call) -> None:
    """An optimizer construction fit() steps (its rate scaled already). A
    rate that is a schedule cannot be set by the warmup callback: a schedule
    around it ramps it, told fit()'s steps per epoch by a small callback."""
    if call in _state(ctx).setdefault("fit_optimizers", []):
        return
    _state(ctx)["fit_optimizers"].append(call)
    if not ctx.backend.warmup_epochs:
        return
    rate = find_arg(call, ("learning_rate", "lr"), 0)
    if rate is not None and any(t.kind == A.SCHEDULE for t in ctx.a.types(rate.value)):
        _state(ctx).setdefault("fit_schedule_optimizers", []).append(call)
        name = _schedule_around_rate(ctx, call)
        k = ctx.backend.warmup_epochs
        ctx.change(call, RULE, f"{ctx.a.code(call.func)}(...): its learning-rate schedule warmed up from the rate "
                               f"as written to the scaled one over fit()'s first {_epochs(k)}, linearly per step "
                               f"(--warmup-epochs {k}, --lr-scaling {ctx.backend.lr_scaling}): {ctx.fill(name)}")
    else:
        _state(ctx)["fit_plain_rate"] = True


def note_schedule(ctx, schedule: cst.Call) -> None:
    """A learning-rate schedule feeds an optimizer (fit()'s warmup callback
    cannot set its rate: apply() refuses one that was not wrapped)."""
    _state(ctx).setdefault("schedules", []).append(schedule)


# ------------------------------------------------------ loops that apply steps
def _wrap_rate(ctx, call: cst.Call, wrapper: str) -> None:
    """Replace the (already scaled) learning rate of an optimizer
    construction by ``wrapper`` around it ({rate}: its updated source).
    The rate's own node is edited where the script gives one, so the edit
    composes with the scaling before it and any wrapper of the call."""
    given = find_arg(call, ("learning_rate", "lr"), 0)
    if given is not None:
        ctx.plan.replace(given.value, lambda upd: ctx.expr(wrapper, rate=ctx.module.code_for_node(upd)))
        return

    def edit(updated: cst.Call) -> cst.Call:  # the default rate, written out scaled by lr_scaling
        arg = find_arg(updated, ("learning_rate", "lr"), 0)
        new = ctx.expr(wrapper, rate=ctx.module.code_for_node(arg.value))
        return updated.with_changes(args=[a.with_changes(value=new) if a is arg else a for a in updated.args])
    ctx.plan.replace(call, edit)


def _schedule_around_rate(ctx, call: cst.Call) -> str:
    """Warm the (scaled) rate of a Keras optimizer construction up with the
    schedule class written into the script; its name."""
    k = ctx.backend.warmup_epochs
    rate = find_arg(call, ("learning_rate", "lr"), 0)
    if rate is not None:  # the script's own schedule is warmed up inside the wrapper: no fit() refusal for it
        _state(ctx).setdefault("wrapped_schedules", []).extend(
            t.call for t in ctx.a.types(rate.value) if t.kind == A.SCHEDULE and t.call is not None)
    name = _helper(ctx, "schedule", lambda: ctx.backend.warmup_schedule(ctx, keras_module(ctx)))
    _wrap_rate(ctx, call, f"{name}({{rate}}, {ctx.backend.warmup_factor()}, {k})")
    return name


def warm_up_tape_optimizer(ctx, call: cst.Call) -> None:
    """The rate of a Keras optimizer that a GradientTape loop steps, scaled
    already, warmed up by a schedule around it (number or schedule alike)."""
    k = ctx.backend.warmup_epochs
    if not k or call in _state(ctx).setdefault("loop_optimizers", []):
        return
    if call in _state(ctx).get("fit_optimizers", ()):
        raise ctx.unsupported(call, f"--warmup-epochs: {ctx.a.code(call.func)}(...) is stepped both by fit() and by "
                                    f"a GradientTape loop, whose epochs differ: one optimizer cannot be warmed up "
                                    f"for both; convert without --warmup-epochs, or give the loop its own optimizer")
    _state(ctx)["loop_optimizers"].append(call)
    name = _schedule_around_rate(ctx, call)
    ctx.change(call, RULE, f"{ctx.a.code(call.func)}(...): its learning rate warmed up from the rate as written to the "
                           f"scaled one over this process's first {_epochs(k)} of steps, linearly per step "
                           f"(--warmup-epochs {k}, --lr-scaling {ctx.backend.lr_scaling}): {ctx.fill(name)}")


def warm_up_tf1_optimizer(ctx, call: cst.Call) -> None:
    """The rate of a TF1 optimizer, scaled already, warmed up over the first
    global steps of this process (the step its minimize() increments)."""
    k = ctx.backend.warmup_epochs
    if not k or call in _state(ctx).setdefault("tf1_optimizers", []):
        return
    _state(ctx)["tf1_optimizers"].append(call)
    a = ctx.a
    if not ctx.backend.steps_per_epoch:
        raise ctx.unsupported(call, f"--warmup-epochs {k} for a TF1 training loop: the converter cannot see how many "
                                    f"of this script's steps make an epoch (its graph is built before any loop runs); "
                                    f"{GIVE_STEPS}")
    step = _global_step(ctx, call)
    name = _helper(ctx, "tf1_function", lambda: ctx.backend.tf1_warmup(ctx))
    _wrap_rate(ctx, call, f"{name}({{rate}}, {step}, {ctx.backend.warmup_factor()}, {ctx.backend.warmup_steps()})")
    ctx.change(call, RULE, f"{a.code(call.func)}(...): its learning rate warmed up from the rate as written to the "
                           f"scaled one over this process's first {_epochs(k)} of "
                           f"{ctx.backend.steps_per_epoch} original steps each, counted by {step} "
                           f"(--warmup-epochs {k}, --lr-scaling {ctx.backend.lr_scaling}, --steps-per-epoch "
                           f"{ctx.backend.steps_per_epoch}): {ctx.fill(name)}")


def not_warmed_up(ctx, call: cst.Call) -> None:
    """A rate tfdist could not scale (the report says why) is not warmed up either."""
    if ctx.backend.warmup_epochs:
        ctx.warn(call, RULE, f"the learning rate of {ctx.a.code(call.func)}(...) was not scaled by tfdist, so it is "
                             f"not warmed up either (--warmup-epochs): ramp it by hand from the rate as written to "
                             f"the scaled one over the first {_epochs(ctx.backend.warmup_epochs)}")


def _global_step(ctx, call: cst.Call) -> str:
    """The global step the optimizer's minimize()/apply_gradients() is given,
    as source usable where the optimizer is built; refused otherwise."""
    a = ctx.a
    steps = [c for c in a.calls if method_name(c) in ("minimize", "apply_gradients")
             and (receiver(c) is call or any(t.call is call for t in a.types(receiver(c))))]
    given = [arg.value for c in steps for arg in [find_arg(c, "global_step", 1)] if arg is not None]
    if not steps or len(given) < len(steps):
        where = steps[len(given)] if len(given) < len(steps) and steps else call
        raise ctx.unsupported(where, f"--warmup-epochs counts this optimizer's steps with the global step, but "
                                     f"{a.code(where.func) if isinstance(where, cst.Call) else 'it'} is given none: "
                                     f"pass global_step=tf.train.get_or_create_global_step() to minimize()")
    value = given[0]
    if isinstance(value, cst.Call) and a.is_name(value, apis.TF1_GLOBAL_STEP_FUNCTIONS):
        return source(a.module, value, False)
    if isinstance(value, cst.Name):
        bound = dataflow.all_binding_statements(a, value)
        if bound and all(a.end_line(s) < a.line(call) for s in bound):
            return value.value
    raise ctx.unsupported(value, f"--warmup-epochs: the global step {a.code(value)} is not known where "
                                 f"{a.code(call.func)}(...) is built (line {a.line(call)}): create it before the "
                                 f"optimizer (global_step = tf.train.get_or_create_global_step())")


def _epoch_length(ctx) -> None:
    """Tape loops without --steps-per-epoch: this process's steps per epoch
    are the batches of the dataset its step loop iterates, once per pass of
    an epoch loop around it; set right before that epoch loop."""
    from . import gradient_tape  # it scales rates through this module: imported when used
    a = ctx.a
    applies = {id(p) for p in gradient_tape.apply_calls(a)}
    loops = [f for f in a.for_loops if gradient_tape._trains(a, f.body, applies)]
    inner = [f for f in loops if not any(o is not f and dataflow.is_inside(a, o, f) for o in loops)]
    first = _state(ctx)["loop_optimizers"][0]
    places = []
    for loop in inner:
        dataset, take = gradient_tape._loop_dataset(a, loop.iter)
        epoch_loop = dataflow.outermost_loop(a, loop)
        reason = _why_not_epoch(a, loop, dataset, take, epoch_loop)
        if reason:
            raise ctx.unsupported(loop, f"--warmup-epochs: {reason}, so the converter cannot tell how many steps make "
                                        f"an epoch; {GIVE_STEPS}")
        places.append((epoch_loop, dataset))
    if not places:
        raise ctx.unsupported(first, "--warmup-epochs: no training loop over a dataset inside an epoch loop was "
                                     f"found, so the converter cannot tell how many steps make an epoch; {GIVE_STEPS}")
    if len({(id(e), d.value) for e, d in places}) > 1:
        raise ctx.unsupported(places[1][0], f"--warmup-epochs: several training loops with their own epochs; "
                                            f"{GIVE_STEPS}")
    epoch_loop, dataset = places[0]
    name = _state(ctx)["schedule"]
    ctx.plan.insert_before(epoch_loop, ctx.stmts(
        f"{name}.steps_per_epoch = int({dataset.value}.cardinality())",
        comment=ctx.say("{engine}: the learning-rate warmup counts epochs in this process's batches of "
                        "{dataset}.", dataset=dataset.value)))
    ctx.change(dataset, RULE, f"the learning-rate warmup's epoch: this process's batches of {dataset.value}, "
                              f"counted before the epoch loop (line {a.line(epoch_loop)})")


def _why_not_epoch(a, loop, dataset, take, epoch_loop) -> Optional[str]:
    """Why a step loop does not show its epoch ('' / None when it does)."""
    line = a.line(loop)
    if dataset is None or not isinstance(dataset, cst.Name) or take is not None:
        return f"the training loop at line {line} does not iterate a dataset by its name"
    if epoch_loop is None or epoch_loop is loop:
        return f"the training loop at line {line} over {dataset.value} has no epoch loop around it"
    # bound before the epoch loop: assignments above it, or a parameter of
    # the function it is in (``def train(dataset, epochs)``)
    origins = [origin for origin, _ in a.assigned_values(dataset)]
    late = [o for o in origins if not isinstance(o, cst.Param)
            and (a.statement_of(o) is None or a.end_line(a.statement_of(o)) >= a.line(epoch_loop))]
    if not origins or late:
        return f"{dataset.value} is not bound once and for all before the epoch loop at line {a.line(epoch_loop)}"
    return None


# --------------------------------------------------------------------- rule
def apply(ctx) -> None:
    k = ctx.backend.warmup_epochs
    if not k:
        return
    schedules = _state(ctx).get("schedules")
    if schedules and _state(ctx).get("fits"):
        # a schedule reached by fit() that tfdist did not wrap (it could not
        # see which optimizer it feeds): the callback would set its rate
        unwrapped = [s for s in schedules if s not in _state(ctx).get("wrapped_schedules", ())]
        if unwrapped:
            raise ctx.unsupported(unwrapped[0], "--warmup-epochs with a learning-rate schedule in Keras fit() whose "
                                                "optimizer tfdist cannot see: the warmup callback would set the rate "
                                                "the schedule computes itself; convert without --warmup-epochs, or "
                                                "warm the schedule up by hand")
    if _state(ctx).get("loop_optimizers") and not ctx.backend.steps_per_epoch:
        _epoch_length(ctx)
