"""Writing the learning-rate warmup into optimizers, fit callbacks and loops.

--warmup-epochs K: gradual learning-rate warmup (Goyal et al., "Accurate,
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

import libcst as cst
from .. import apis
from ..engine import analysis as A
from ..engine import dataflow
from ..facts.syntax import find_arg, method_name, receiver, source
from ..facts.warmups import GIVE_STEPS, RULE, epochs_phrase, keras_module, plain_reference, warmup_state


# ------------------------------------------------------------------ Keras fit
def fit_callbacks(ctx, call: cst.Call) -> list:
    """Callback templates fit() ``call`` gets for the warmup (after the
    engine's own callbacks); also schedules the class they need."""
    if not ctx.backend.warmup_epochs:
        return []
    model = receiver(call)
    if warmup_state(ctx).get("fit_schedule_optimizers"):
        if warmup_state(ctx).get("fit_plain_rate"):
            raise ctx.unsupported(call, "--warmup-epochs: this file's fit() optimizers mix a learning-rate schedule "
                                        "and a plain rate, warmed up in two different ways; convert without "
                                        "--warmup-epochs, or warm them up by hand")
        template, class_template = ctx.backend.warmup_epoch_callback(ctx, keras_module(ctx), warmup_state(ctx)["schedule"])
    else:
        template, class_template = ctx.backend.keras_warmup_callback(
            ctx, ctx.a.code(model) if model is not None and plain_reference(model) else None)
    if class_template is not None:
        _emit_once(ctx, "callback_class", class_template)
    warmup_state(ctx).setdefault("fits", []).append(call)
    k = ctx.backend.warmup_epochs
    ctx.change(call, RULE, f"{method_name(call)}() warms the learning rate up from the rate as written to the "
                           f"scaled one over its first {epochs_phrase(k)}, linearly per step "
                           f"(--warmup-epochs {k}, --lr-scaling {ctx.backend.lr_scaling}): "
                           f"{ctx.fill(template).split('(')[0]}")
    return [template]


def _emit_once(ctx, key: str, template: str) -> None:
    """A class or function the warmup needs, once per file, at module level
    after the start-up code."""
    if warmup_state(ctx).get(key):
        return
    warmup_state(ctx)[key] = True
    ctx.define(template, ctx.say("{engine}: learning-rate warmup (--warmup-epochs)."))


def _helper(ctx, key: str, make) -> str:
    """The name of a helper the backend writes (``make() -> (name,
    template)``), written into the module the first time it is asked for."""
    if key not in warmup_state(ctx):
        name, template = make()
        _emit_once(ctx, key + " written", template)
        warmup_state(ctx)[key] = name
    return warmup_state(ctx)[key]


def note_fit_optimizer(ctx, call: cst.Call) -> None:
    """An optimizer construction fit() steps (its rate scaled already). A
    rate that is a schedule cannot be set by the warmup callback: a schedule
    around it ramps it, told fit()'s steps per epoch by a small callback."""
    if call in warmup_state(ctx).setdefault("fit_optimizers", []):
        return
    warmup_state(ctx)["fit_optimizers"].append(call)
    if not ctx.backend.warmup_epochs:
        return
    rate = find_arg(call, ("learning_rate", "lr"), 0)
    if rate is not None and any(t.kind == A.SCHEDULE for t in ctx.a.types(rate.value)):
        warmup_state(ctx).setdefault("fit_schedule_optimizers", []).append(call)
        name = _schedule_around_rate(ctx, call)
        k = ctx.backend.warmup_epochs
        ctx.change(call, RULE, f"{ctx.a.code(call.func)}(...): its learning-rate schedule warmed up from the rate "
                               f"as written to the scaled one over fit()'s first {epochs_phrase(k)}, linearly per step "
                               f"(--warmup-epochs {k}, --lr-scaling {ctx.backend.lr_scaling}): {ctx.fill(name)}")
    else:
        warmup_state(ctx)["fit_plain_rate"] = True


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
        warmup_state(ctx).setdefault("wrapped_schedules", []).extend(
            t.call for t in ctx.a.types(rate.value) if t.kind == A.SCHEDULE and t.call is not None)
    name = _helper(ctx, "schedule", lambda: ctx.backend.warmup_schedule(ctx, keras_module(ctx)))
    _wrap_rate(ctx, call, f"{name}({{rate}}, {ctx.backend.warmup_factor()}, {k})")
    return name


def warm_up_tape_optimizer(ctx, call: cst.Call) -> None:
    """The rate of a Keras optimizer that a GradientTape loop steps, scaled
    already, warmed up by a schedule around it (number or schedule alike)."""
    k = ctx.backend.warmup_epochs
    if not k or call in warmup_state(ctx).setdefault("loop_optimizers", []):
        return
    if call in warmup_state(ctx).get("fit_optimizers", ()):
        raise ctx.unsupported(call, f"--warmup-epochs: {ctx.a.code(call.func)}(...) is stepped both by fit() and by "
                                    f"a GradientTape loop, whose epochs differ: one optimizer cannot be warmed up "
                                    f"for both; convert without --warmup-epochs, or give the loop its own optimizer")
    warmup_state(ctx)["loop_optimizers"].append(call)
    name = _schedule_around_rate(ctx, call)
    ctx.change(call, RULE, f"{ctx.a.code(call.func)}(...): its learning rate warmed up from the rate as written to the "
                           f"scaled one over this process's first {epochs_phrase(k)} of steps, linearly per step "
                           f"(--warmup-epochs {k}, --lr-scaling {ctx.backend.lr_scaling}): {ctx.fill(name)}")


def warm_up_tf1_optimizer(ctx, call: cst.Call) -> None:
    """The rate of a TF1 optimizer, scaled already, warmed up over the first
    global steps of this process (the step its minimize() increments)."""
    k = ctx.backend.warmup_epochs
    if not k or call in warmup_state(ctx).setdefault("tf1_optimizers", []):
        return
    warmup_state(ctx)["tf1_optimizers"].append(call)
    a = ctx.a
    if not ctx.backend.steps_per_epoch:
        raise ctx.unsupported(call, f"--warmup-epochs {k} for a TF1 training loop: the converter cannot see how many "
                                    f"of this script's steps make an epoch (its graph is built before any loop runs); "
                                    f"{GIVE_STEPS}")
    step = _global_step(ctx, call)
    name = _helper(ctx, "tf1_function", lambda: ctx.backend.tf1_warmup(ctx))
    _wrap_rate(ctx, call, f"{name}({{rate}}, {step}, {ctx.backend.warmup_factor()}, {ctx.backend.warmup_steps()})")
    ctx.change(call, RULE, f"{a.code(call.func)}(...): its learning rate warmed up from the rate as written to the "
                           f"scaled one over this process's first {epochs_phrase(k)} of "
                           f"{ctx.backend.steps_per_epoch} original steps each, counted by {step} "
                           f"(--warmup-epochs {k}, --lr-scaling {ctx.backend.lr_scaling}, --steps-per-epoch "
                           f"{ctx.backend.steps_per_epoch}): {ctx.fill(name)}")


def not_warmed_up(ctx, call: cst.Call) -> None:
    """A rate tfdist could not scale (the report says why) is not warmed up either."""
    if ctx.backend.warmup_epochs:
        ctx.warn(call, RULE, f"the learning rate of {ctx.a.code(call.func)}(...) was not scaled by tfdist, so it is "
                             f"not warmed up either (--warmup-epochs): ramp it by hand from the rate as written to "
                             f"the scaled one over the first {epochs_phrase(ctx.backend.warmup_epochs)}")


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
