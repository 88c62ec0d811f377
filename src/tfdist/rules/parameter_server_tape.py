"""``tf.GradientTape`` loops under tf.distribute's ParameterServerStrategy
(``--strategy parameter-server``), in the shape TensorFlow's parameter-server
tutorial trains: a step function of the batch, called in a loop over a
tf.data dataset. The chief's ``ClusterCoordinator`` schedules each step on
whichever worker is free, the worker reading the next batch of its own copy
of the dataset (repeated); one pass over the dataset schedules its number of
batches and ends with ``coordinator.join()``; the step's result is read
(fetched) where the script uses it. The optimizers and the models they
train are built in the strategy's scope (their variables on the parameter
servers). A Keras Loss object called in the step, whose default reduction
tf-keras refuses under a strategy, is built with ``reduction="none"`` and
its value averaged (``tf.reduce_mean``: the same mean).

Refused, with the reason and the edit: Keras 3 (keras-team/keras#18624), a
step written in the loop (not a function), a step called on anything but
the loop's batch, a loop over anything but a tf.data dataset, metrics
updated in the step, steps updating variables by hand.
"""
from __future__ import annotations

from typing import List

import libcst as cst
from .. import apis
from ..engine import analysis as A
from ..engine import patterns as P
from ..engine.rule import Rule, register
from ..engine.scopes import walk
from ..actions import refusals
from ..actions import tape_scope
from ..facts import gradient_tapes
from ..facts import losses
from ..facts.loss_bindings import bound_values
from ..facts.syntax import calls_in, find_arg, receiver, source

RULE = "parameter-server"
SCOPE_SAID = ("{what} created in {scope}: their variables live on the parameter servers (those of at least the "
              "partitioner's size split across them), the chief coordinates")
METRIC_MODULES = ("tensorflow.keras.metrics.", "tf_keras.metrics.", "keras.metrics.")


def _steps(ctx) -> List[cst.FunctionDef]:
    """The functions holding the training tapes; refused when a tape is not in one."""
    a = ctx.a
    out: List[cst.FunctionDef] = []
    for w, *_ in gradient_tapes.training_tapes(a):
        fdef = a.enclosing_function(w)
        if fdef is None or a.method_owner(fdef) is not None:
            raise ctx.unsupported(w, (
                f"the training step at line {a.line(w)} is not a function of this module's taking the batch: under "
                "ParameterServerStrategy the chief schedules each step on a worker, which runs a function. Write "
                "the step as one (def train_step(x, y): with tf.GradientTape() ...) and call it in the loop over "
                "the dataset{alternative}".replace("{alternative}", ctx.say("{alternative}"))))
        if fdef not in out:
            out.append(fdef)
    return out


def _loop_of(a: A.Analysis, call: cst.Call):
    """The innermost for loop around ``call`` in its function, or None."""
    for p in a.ancestors(call):
        if isinstance(p, (cst.FunctionDef, cst.ClassDef)):
            return None
        if isinstance(p, cst.For):
            return p
    return None


def _dataset_and_batch(a: A.Analysis, loop: cst.For):
    """(the dataset expression a loop iterates, the names bound to each batch's parts in order)."""
    it, target = loop.iter, loop.target
    if isinstance(it, cst.Call) and a.is_name(it, {"builtins.enumerate"}) and it.args \
            and isinstance(target, (cst.Tuple, cst.List)) and len(target.elements) == 2:
        it, target = it.args[0].value, target.elements[1].value
    if isinstance(target, cst.Name):
        return it, [target.value]
    if isinstance(target, (cst.Tuple, cst.List)) and all(isinstance(e.value, cst.Name) for e in target.elements):
        return it, [e.value.value for e in target.elements]
    return it, None


def _schedule(ctx, step: cst.FunctionDef, call: cst.Call, loops_done: set) -> None:
    a = ctx.a
    name = step.name.value
    loop = _loop_of(a, call)
    if loop is None:
        raise ctx.unsupported(call, (
            f"{name}() at line {a.line(call)} is not called in a for loop over a tf.data dataset: under "
            "ParameterServerStrategy each worker reads its own copy of the dataset the loop iterates"
            + ctx.say("{alternative}")))
    dataset, names = _dataset_and_batch(a, loop)
    if not a.is_kind(dataset, A.DATASET):
        raise ctx.unsupported(loop, (
            f"the loop at line {a.line(loop)} iterates {a.code(dataset)}, which tfdist does not see as a tf.data "
            "dataset: under ParameterServerStrategy each worker reads its own copy of one; build a "
            "tf.data.Dataset of the samples" + ctx.say("{alternative}")))
    if names is None or any(arg.keyword is not None or arg.star or not isinstance(arg.value, cst.Name)
                            or arg.value.value not in names for arg in call.args):
        raise ctx.unsupported(call, (
            f"{name}({a.code(call)[len(a.code(call.func)) + 1:]} at line {a.line(call)} is not called on the "
            "loop's batch alone: under ParameterServerStrategy the worker that runs the step reads the batch "
            f"itself; pass {name}() the batch only (what else it needs it can read as globals)"
            + ctx.say("{alternative}")))
    inside = {id(n) for arg in call.args for n in walk(arg)}
    target = {id(n) for n in walk(loop.target)}
    for n in walk(loop.body):
        if isinstance(n, cst.Name) and n.value in names and id(n) not in inside and id(n) not in target:
            raise ctx.unsupported(n, (
                f"line {a.line(n)} reads the batch ({n.value}) outside {name}(): under ParameterServerStrategy "
                "the batch is read on the worker that runs the step; use it inside the step only"
                + ctx.say("{alternative}")))
    if id(loop) not in loops_done:
        loops_done.add(id(loop))
        template = ctx.fill(ctx.backend.scheduled_batches("{inner}"), inner="{inner}")
        ctx.plan.replace(dataset, lambda upd: ctx.expr(template, inner=ctx.module.code_for_node(upd)))
        ctx.change(dataset, RULE, ctx.say(
            "each pass over {data} schedules its number of batches as steps on the workers, each worker reading "
            "its own copy of the dataset (repeated, shuffled by itself); the pass ends when they have all run "
            "(coordinator.join())", data=a.code(dataset)))
    args = ", ".join(arg.value.value for arg in call.args)
    new = ctx.expr(ctx.backend.scheduled_step(source(ctx.module, call.func, False), args))
    ctx.plan.replace(call, lambda old: new)
    ctx.change(call, RULE, ctx.say(
        "{name}() scheduled by the chief on a free worker, on the batch that worker reads; its result is read "
        "where it is used", name=name))


def _refuse_metrics(ctx, steps: List[cst.FunctionDef]) -> None:
    a = ctx.a
    for step in steps:
        for call in calls_in(step.body):
            obj = receiver(call) if isinstance(call.func, cst.Attribute) else call.func
            made = [v for v in bound_values(a, obj) if isinstance(v, cst.Call)] if obj is not None else []
            if any(n.startswith(METRIC_MODULES) for v in made for n in a.names(v)):
                raise ctx.unsupported(call, (
                    f"{a.code(obj)} (a Keras metric) is updated in {step.name.value}(): under "
                    "ParameterServerStrategy the step runs on a worker, and a metric made outside the strategy's "
                    "scope lives on the chief. Return what it measures from the step and update the metric with "
                    "the returned value in the loop" + ctx.say("{alternative}")))


def _average_losses(ctx, steps: List[cst.FunctionDef]) -> None:
    """Keras Loss objects the steps call, built with the default (mean) reduction, which tf-keras refuses
    under a strategy: built with reduction="none", every call averaged with tf.reduce_mean."""
    a = ctx.a
    made = []
    for step in steps:
        for call in calls_in(step.body):
            for c in losses.keras_loss_constructions(a, call.func):
                if c not in made:
                    made.append(c)
    if not made:
        return
    for c in made:
        if not any(n.startswith(apis.KERAS_LOSS_MODULES) for n in a.names(c)):
            raise ctx.unsupported(c, (
                f"{a.code(c.func)}, a Loss class of this module, is called in the step with a mean reduction, which "
                "tf-keras refuses under ParameterServerStrategy: give it reduction='none' and average its value "
                "with tf.reduce_mean" + ctx.say("{alternative}")))
        if find_arg(c, "reduction", None) is not None:
            raise ctx.unsupported(c, (
                f"{a.code(c)}: tf-keras refuses this reduction under ParameterServerStrategy: build it with "
                "reduction='none' and average its value with tf.reduce_mean" + ctx.say("{alternative}")))
        none = cst.Arg(keyword=cst.Name("reduction"), value=cst.SimpleString(ctx.quoted("none")),
                       equal=cst.AssignEqual(whitespace_before=cst.SimpleWhitespace(""),
                                             whitespace_after=cst.SimpleWhitespace("")))
        ctx.plan.replace(c, lambda upd, none=none: upd.with_changes(
            args=[*upd.args[:-1], upd.args[-1].with_changes(comma=cst.Comma(whitespace_after=cst.SimpleWhitespace(
                " ")))] + [none] if upd.args else [none]))
        ctx.change(c, RULE, ctx.say(
            "{loss} built with reduction=\"none\" (tf-keras refuses its mean reduction under a strategy); every "
            "call of it averaged with tf.reduce_mean, the same mean", loss=a.code(c.func)))
    template = ctx.fill("{tf}.reduce_mean({inner})", inner="{inner}")
    for call in a.calls:
        if set(map(id, losses.keras_loss_constructions(a, call.func))) & set(map(id, made)):
            ctx.plan.replace(call, lambda upd: ctx.expr(template, inner=ctx.module.code_for_node(upd)))
            ctx.change(call, RULE, ctx.say("{loss}(...) averaged with tf.reduce_mean (its object built with "
                                           "reduction=\"none\")", loss=a.code(call.func)))


def apply(ctx) -> None:
    a = ctx.a
    if refusals.keras3_imports(a):
        refusals.refuse_keras3(ctx)
    refusals.refuse_tf1_optimizer_tapes(ctx)
    found = gradient_tapes.training_tapes(a)
    by_hand = [t for t in found if not gradient_tapes.optimizer_applied(a, t[3])]
    if by_hand:
        raise ctx.unsupported(by_hand[0][0], (
            "a step that updates its variables by hand (no optimizer applies its gradients) is not converted under "
            "ParameterServerStrategy" + ctx.say("{alternative}")))
    steps = _steps(ctx)
    loops_done: set = set()
    for step in steps:
        calls = a.calls_by_name(step)
        if not calls:
            raise ctx.unsupported(step, (
                f"{step.name.value}() is not called by its name in this module: tfdist cannot find the loop to "
                "schedule it from" + ctx.say("{alternative}")))
        for call in calls:
            _schedule(ctx, step, call, loops_done)
    _refuse_metrics(ctx, steps)
    _average_losses(ctx, steps)
    applies = list(gradient_tapes.apply_calls(a))
    tape_scope.scope_trained_state(ctx, applies, [c for *_, cs in found for c in cs],
                                   what="the optimizers and the models they train", said=SCOPE_SAID)
    for template, comment in ctx.backend.tape_definitions(ctx):
        ctx.define(template, comment)


@register
class ParameterServerTape(Rule):
    id = "parameter-server-tape"
    description = ("GradientTape loops under ParameterServerStrategy: each step scheduled by the chief on a free "
                   "worker reading its own copy of the dataset, state in the scope, results read when used.")
    engines = ("parameter-server",)
    kinds = (RULE, "replica-scope")
    refuses = ("Keras 3 (keras-team/keras#18624), a step written in the loop, a step called on more than the "
               "loop's batch, a loop over anything but a tf.data dataset, metrics updated in the step, updates by hand")
    example = "gradient_tape/parameter_server_tape"
    order = 20
    PATTERN = P.TAPE

    def detect(self, a):
        return gradient_tapes.detect(a)

    def apply(self, ctx) -> None:
        apply(ctx)
