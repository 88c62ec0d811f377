"""Loss functions handed to ``compile(loss=...)`` that return one number, on
engines whose replicas each reduce their own loss (tf.distribute).

Keras reduces a loss function's per-example values to this replica's share
of the mean; a function that averages itself returns one number, which
Keras 3's reduction returns as it is (``reduce_values``): each replica's loss
is then the whole mean, the optimizer sums N of them, and the gradient is N
times the single-process one (measured: 1 process x 2 devices, the kernel
moved twice as far; the logged loss doubled too). Named with the edit,
never guessed at: the function may be meant that way elsewhere.
"""
from __future__ import annotations

import libcst as cst
from ..engine import analysis as A
from ..engine.rule import Rule, register
from ..facts import loss_bindings
from ..facts import losses
from ..facts.syntax import find_arg, method_name, receiver

RULE = "gradient-tape"


@register
class CompiledLosses(Rule):
    id = "compiled-losses"
    description = ("A loss function given to compile() that returns one number (it averages itself): under "
                   "tf.distribute each replica's loss would be the whole mean; warned with the edit.")
    engines = ("tf-distribute",)
    kinds = (RULE,)
    example = "keras/compile_loss_one_number_warned"
    order = 56

    def apply(self, ctx) -> None:
        a = ctx.a
        for call in a.calls:
            if method_name(call) != "compile" or A.MODEL not in a.kinds(receiver(call)):
                continue
            arg = find_arg(call, "loss", 1)
            if arg is None or arg.star:
                continue
            # followed through names and factories returning their nested def (get_loss(dims))
            functions = loss_bindings.functions_given(a, arg.value)
            if functions and all(losses.returns_one_number(a, f) if isinstance(f, cst.FunctionDef)
                                 else losses.one_number(a, f.body) for f in functions):
                fn = functions[0].name.value if isinstance(functions[0], cst.FunctionDef) else "the lambda"
                ctx.warn(arg.value, RULE, ctx.say(
                    "{fn} returns one number (it averages the errors itself): Keras divides a loss function's "
                    "per-example values by {size} under {engine}, not one number, so each replica's loss would be "
                    "the whole mean and the gradient {size} times too large: return per-example values (reduce "
                    "every axis but the first), or divide what {fn} returns by {size}", fn=fn))
