"""Variables a tape step updates by hand (``w.assign_sub(lr * dw)``,
``v.assign(v - lr * g)``, no optimizer), on an engine that replicates
variables (tf.distribute).

An optimizer sums the replicas' gradients inside ``apply_gradients``; an
update written by hand has nobody to do it, and a MirroredVariable takes no
update from one replica alone. Converted exactly:

* the gradients are summed over the replicas where ``tape.gradient`` returns
  them (``global_gradients(...)``; each replica differentiated its share of
  the mean loss, so the sum is the gradient of the global batch's mean);
* each update runs once on every replica's copy of the variable, through the
  strategy (``update_on_replicas(w, "assign_sub", lr * dw)``), with the value
  every replica computed alike from the summed gradients;
* the rate it multiplies the gradient by is scaled like an optimizer's
  (the global batch is num_replicas_in_sync times the batch); one tfdist
  cannot tell is warned with the edit.
"""
from __future__ import annotations

from typing import Sequence, Set

import libcst as cst
from ..facts.gradient_tapes import gradients_and_loop_targets, update_rate
from ..facts.syntax import mentions, method_name, receiver
from ..facts import learning_rates
from . import global_gradients
from . import learning_rate


def convert(ctx, rule: str, grad_calls: Sequence[cst.Call], updates: Sequence[cst.Call],
            unscaled: Set[int] = frozenset()) -> None:
    """``unscaled``: ids of updates whose rate stays (steps on the whole data: the global
    batch is the original's)."""
    a = ctx.a
    first = updates[0]
    for g in grad_calls:
        global_gradients.sum_where_returned(ctx, g)
        ctx.change(g, rule, ctx.say(
            "gradients summed over the replicas here: the step updates its variables by hand (line {line}, "
            "{what}), with no optimizer to sum them", line=str(a.line(first)), what=a.code(first.func)))
    gradients = gradients_and_loop_targets(a, list(grad_calls))
    # an update several tapes reach (a Layer's methods each differentiating for the same variables) once
    for u in {id(u): u for u in updates}.values():
        rate = update_rate(a, u, frozenset(gradients))
        if id(u) in unscaled:
            pass
        elif rate is None:
            ctx.warn(u, learning_rates.RULE, ctx.say(
                "cannot tell the learning rate of {what}: multiply it by {size} by hand (the global batch is "
                "{size} times the batch)", what=a.code(u)))
        else:
            learning_rate.scale_value(ctx, rate, u)
        template = ctx.expr(ctx.backend.update_by_hand("VARIABLE", method_name(u), "VALUE"))

        def build(new, template=template):
            first_arg, name, value = template.args
            return template.with_changes(args=[first_arg.with_changes(value=new.func.value), name,
                                               value.with_changes(value=new.args[0].value)])

        ctx.plan.replace(u, build)
        ctx.change(u, rule, ctx.say(
            "{variable} updated on every replica's copy at once, with the summed gradients",
            variable=a.code(receiver(u))))


def loops_over_gradients(a, grad_calls: Sequence[cst.Call]) -> Set[int]:
    """Ids of the for loops walking these gradients (``for v, g in zip(variables,
    grads): v.assign_sub(lr * g)``): part of a step, not loops of steps."""
    if not grad_calls:
        return set()
    names = gradients_and_loop_targets(a, list(grad_calls))
    return {id(loop) for loop in a.for_loops if mentions(loop.iter, names)}
