"""What a learning rate is: a number, a schedule, a rate of the user's own, already scaled or not.

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
from ..engine.memo import fact
from ..engine import analysis as A
from ..engine.scopes import walk
from . import kinds
from . import warmups


RULE = kinds.LR_SCALING


def scaled_constructions(ctx) -> set:
    """Optimizer constructions already scaled (per conversion), however many rules reach them."""
    return ctx.state("lr_scaling.scaled")


def default_lr(name: str) -> Optional[float]:
    if name in apis.KERAS_OPTIMIZERS:
        return apis.KERAS_OPTIMIZERS[name]
    if name in apis.KERAS_LEGACY_OPTIMIZERS:
        return apis.KERAS_LEGACY_OPTIMIZERS[name]
    return apis.TF1_OPTIMIZERS.get(name)


@fact
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


@fact
def schedule_calls(a, value) -> list:
    """Step-keyed schedule calls a learning rate is: the call itself, or the
    value of every binding of a name (through plain assignments only)."""
    if isinstance(value, cst.Call):
        return [value] if a.is_name(value, apis.STEP_KEYED_SCHEDULE_ARGS) else []
    if isinstance(value, cst.Name):
        bound = a.assigned_values(value)
        if bound and all(v is not None for _, v in bound):
            return [v for _, v in bound if isinstance(v, cst.Call) and a.is_name(v, apis.STEP_KEYED_SCHEDULE_ARGS)]
    return []


def divided_schedules(ctx) -> set:
    """Schedule calls whose step counts were divided (per conversion)."""
    return ctx.state("lr_scaling.divided")


def policy_phrase(ctx) -> str:
    """What was done to a learning rate, naming a policy other than the default."""
    policy = ctx.backend.lr_scaling
    if policy == "linear":
        return "scaled by the number of processes" + warmups.phrase(ctx)
    if policy == "sqrt":
        return "scaled by the square root of the number of processes (--lr-scaling sqrt)" + warmups.phrase(ctx)
    return "kept as written (--lr-scaling none)"


def run_time_scalings(ctx) -> dict:
    return ctx.state("lr_scaling.run_time", dict)
