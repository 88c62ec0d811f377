"""Gradients a step changes before its optimizer applies them, on an engine
whose optimizer sums the replicas' gradients inside apply (tf.distribute).

Clipping by global norm, by norm or by value, scaling, filtering: on one
process they act on the gradient of the whole batch. Under a strategy each
replica differentiates its share of the loss, and the optimizer sums the
shares only inside ``apply_gradients`` / ``apply`` (Keras 3:
``TFOptimizer._all_reduce_sum_gradients``; tf-keras: ``aggregate_gradients``),
so a step that clips before would clip each share: with 2 replicas a
global-norm clip lets through up to twice the norm. Converted exactly:

* the gradients are summed over the replicas where ``tape.gradient`` returns
  them (``global_gradients(tape.gradient(...))``), so whatever the step does
  next acts on the gradient of the global batch, as in one process;
* each optimizer step handed them gets them whole from the first replica
  and zeros from the others (``apply_gradients(replica_part(zip(grads,
  variables)))``): its own sum over the replicas gives them back exactly.
  Keras 3's optimizer clips each replica's gradients before it sums them
  (``clipnorm``, ``global_clipnorm``, ``clipvalue``: ``_backend_apply_gradients``
  clips, then ``TFOptimizer._all_reduce_sum_gradients``; measured: twice the
  single-process update on 2 replicas); handed the sum whole, it clips the sum.

Every gradient the step differentiates for those optimizer steps goes
through the sum, so none reaches them undivided; an optimizer step in
another function than the gradient (a helper others may call with other
gradients) is refused with its line.
"""
from __future__ import annotations

from typing import List, Sequence, Tuple

import libcst as cst
from ..facts import gradient_changes
from ..facts.syntax import find_arg, method_name
from ..facts.train_steps import CHANGED, Refusal
from .. import apis


def summed_group(a, grad_calls: Sequence[cst.Call], applies: Sequence[cst.Call]
                 ) -> Tuple[List[cst.Call], List[cst.Call], List[cst.CSTNode]]:
    """The gradient calls to sum, the optimizer steps to hand them once, and the
    changes that make it necessary: the gradients some change reaches,
    closed over the optimizer steps they share -- every gradient an adjusted
    step receives is summed, every summed gradient's step adjusted."""
    applies = tuple(applies)
    changed = {g: gradient_changes.changes(a, g, applies) for g in grad_calls}
    group = [g for g in grad_calls if changed[g]]
    steps: List[cst.Call] = []
    grew = bool(group)
    while grew:
        grew = False
        for g in group:
            steps += [p for p in gradient_changes.receiving(a, g, applies) if p not in steps]
        for g in grad_calls:
            if g not in group and any(p in steps for p in gradient_changes.receiving(a, g, applies)):
                group.append(g)
                grew = True
    return group, steps, [c for g in group for c in changed[g]]


def _gradients_arg(p: cst.Call):
    """The argument of an optimizer step holding the gradients
    (``grads_and_vars`` of apply_gradients, ``grads`` of a Keras 3 apply)."""
    keyword = "grads" if method_name(p) == "apply" else apis.OPTIMIZER_APPLY_METHODS[method_name(p)][0]
    return find_arg(p, keyword, 0)


def sum_where_returned(ctx, g: cst.Call) -> None:
    """``tape.gradient(...)`` becomes ``global_gradients(tape.gradient(...))``:
    the replicas' gradients summed where the tape returns them."""
    wrapper = ctx.expr(ctx.backend.global_gradients("GRADIENTS"))
    ctx.plan.replace(g, lambda new, wrapper=wrapper: wrapper.with_changes(args=[cst.Arg(new)]))


def sum_before_changes(ctx, rule: str, grad_calls: Sequence[cst.Call], applies: Sequence[cst.Call]) -> None:
    """Sum the gradients a step changes over the replicas where
    tape.gradient returns them, and hand them to the optimizer steps
    receiving them once (the first replica); nothing when no gradient is
    changed."""
    a = ctx.a
    group, steps, changed = summed_group(a, grad_calls, applies)
    if not group:
        return
    for g in group:
        if not gradient_changes.receiving(a, g, tuple(applies)):
            raise Refusal(changed[0], CHANGED)
    handed = {p: _gradients_arg(p) for p in steps}
    for p, arg in handed.items():
        if arg is None:
            raise Refusal(p, CHANGED)
    first = changed[0]
    for g in group:
        sum_where_returned(ctx, g)
        ctx.change(g, rule, ctx.say(
            "gradients summed over the replicas here: line {line} ({what}) changes them before the optimizer "
            "sums them, and must act on the gradient of the global batch, as in one process",
            line=str(a.line(first)), what=a.code(first)[:60]))
    for p, arg in handed.items():
        wrapper = ctx.expr(ctx.backend.replica_part("GRADIENTS"))
        ctx.plan.replace(arg.value, lambda new, wrapper=wrapper: wrapper.with_changes(args=[cst.Arg(new)]))
        ctx.change(p, rule, ctx.say(
            "the summed gradients handed to the optimizer once (by the first replica, zeros by the others): "
            "it sums the replicas' gradients again"))
