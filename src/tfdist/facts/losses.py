"""What builds a loss and with what reduction, so each replica's loss can be its share of the
global mean.

Each replica's loss: its share of the global mean.

Under a strategy the optimizer SUMS the replicas' gradients, so every
replica must differentiate its loss divided by the number of replicas --
unless Keras 3 already divided it: a Keras ``Loss`` object with a mean
reduction, run by a strategy, returns the replica's share itself. What the
loss is made of is followed through names, ``self`` attributes and the
parameters an overridden ``compile`` is handed (never its text); a loss that
adds both kinds is warned about, not guessed.
"""
from __future__ import annotations

import libcst as cst
from .. import apis
from ..engine.memo import fact
from ..engine import analysis as A
from .syntax import find_arg
from . import kinds


RULE = kinds.GRADIENT_TAPE


@fact
def loss_kind(a: A.Analysis, expr, depth: int = 0) -> str:
    """'keras' when the loss is made of values of Keras Loss objects with a
    mean reduction (Keras 3 divides each by the number of replicas under a
    strategy), summed or scaled by constants; 'plain' when none is (a mean
    the user computed); 'mixed' when both kinds are added."""
    if depth > 6:
        return "plain"
    if isinstance(expr, cst.Call):
        return "keras" if is_keras_loss_object(a, expr.func) else "plain"
    if isinstance(expr, cst.Name):
        kinds = set()
        for origin, value in a.assigned_values(expr):
            if value is not None:
                kinds.add(loss_kind(a, value, depth + 1))
            elif isinstance(origin, cst.Name) and isinstance(a.parent(origin), cst.AugAssign):
                kinds.add(_augmented_kind(a, a.parent(origin), depth + 1))
        kinds = kinds or {"plain"}
        return kinds.pop() if len(kinds) == 1 else "mixed"
    if isinstance(expr, cst.BinaryOperation):
        if isinstance(expr.operator, (cst.Multiply, cst.Divide)):
            for side, other in ((expr.left, expr.right), (expr.right, expr.left)):
                if isinstance(other, (cst.Integer, cst.Float)):
                    return loss_kind(a, side, depth + 1)
            # a Keras value weighted by a plain one (a tensor of weights) is
            # still divided by Keras; two Keras values multiplied are not a share
            left, right = loss_kind(a, expr.left, depth + 1), loss_kind(a, expr.right, depth + 1)
            if (left, right) == ("plain", "plain"):
                return "plain"
            if left == "keras" and right == "plain":
                return "keras"
            if isinstance(expr.operator, cst.Multiply) and (left, right) == ("plain", "keras"):
                return "keras"
            return "mixed"
        if isinstance(expr.operator, (cst.Add, cst.Subtract)):
            kinds = {loss_kind(a, expr.left, depth + 1), loss_kind(a, expr.right, depth + 1)}
            return kinds.pop() if len(kinds) == 1 else "mixed"
    return "plain"


@fact
def plain_terms(a: A.Analysis, expr, depth: int = 0):
    """The terms a loss adds to Keras Loss objects' values that are no such
    value (``sum(model.losses)`` in ``loss = loss_fn(y, p); loss +=
    sum(model.losses)``), followed through the bindings of names and
    through constant factors; None when the loss is not such a sum."""
    if depth > 6:
        return None
    kind = loss_kind(a, expr, depth)
    if kind == "keras":
        return []
    if kind == "plain":
        return [expr]
    if isinstance(expr, cst.BinaryOperation):
        if isinstance(expr.operator, (cst.Add, cst.Subtract)):
            left, right = plain_terms(a, expr.left, depth + 1), plain_terms(a, expr.right, depth + 1)
            return None if left is None or right is None else left + right
        if isinstance(expr.operator, (cst.Multiply, cst.Divide)):
            for side, other in ((expr.left, expr.right), (expr.right, expr.left)):
                if isinstance(other, (cst.Integer, cst.Float)):
                    return plain_terms(a, side, depth + 1)
        return None
    if not isinstance(expr, cst.Name):
        return None
    bound = a.assigned_values(expr)
    if len(bound) != 1:
        return None
    origin, value = bound[0]
    if value is not None:
        return plain_terms(a, value, depth + 1)
    aug = a.parent(origin) if isinstance(origin, cst.Name) else None
    if not isinstance(aug, cst.AugAssign) or not isinstance(aug.operator, (cst.AddAssign, cst.SubtractAssign)):
        return None
    before = _binding_before(a, aug)
    if before is None or before[1] is None:
        return None
    previous, added = plain_terms(a, before[1], depth + 1), plain_terms(a, aug.value, depth + 1)
    return None if previous is None or added is None else previous + added


def _augmented_kind(a: A.Analysis, aug: cst.AugAssign, depth: int) -> str:
    """``loss += sum(model.losses)``: the kind of the value before (the
    binding of the name last run before this statement, in its block)
    combined with what is added; scaled by a constant, the kind before."""
    if depth > 6 or not isinstance(aug.target, cst.Name):
        return "mixed"
    before = _binding_before(a, aug)
    if before is None:
        return "mixed"
    origin, value = before
    if value is not None:
        previous = loss_kind(a, value, depth + 1)
    elif isinstance(origin, cst.Name) and isinstance(a.parent(origin), cst.AugAssign):
        previous = _augmented_kind(a, a.parent(origin), depth + 1)
    else:
        return "mixed"  # a parameter, a loop target...: what it holds cannot be told
    if isinstance(aug.operator, (cst.AddAssign, cst.SubtractAssign)):
        kinds = {previous, loss_kind(a, aug.value, depth + 1)}
        return kinds.pop() if len(kinds) == 1 else "mixed"
    if isinstance(aug.operator, (cst.MultiplyAssign, cst.DivideAssign)) and isinstance(aug.value, (cst.Integer, cst.Float)):
        return previous
    return "mixed"


def _binding_before(a: A.Analysis, aug: cst.AugAssign):
    """(origin, value) of the binding of ``aug``'s name last before it
    (``loss = loss_fn(y, p)`` for ``loss += ...``), or None."""
    if not isinstance(aug.target, cst.Name):
        return None
    line = a.line(aug)
    before = [(o, v) for o, v in a.assigned_values(aug.target, reaching=False) if a.line(o) < line]
    return before[-1] if before else None


@fact
def is_keras_loss_object(a: A.Analysis, func) -> bool:
    return bool(keras_loss_constructions(a, func))


@fact
def keras_loss_constructions(a: A.Analysis, func) -> list:
    """The constructions of the Keras Loss object with a mean reduction
    ``func`` calls (followed through names, the ``self`` attributes of its
    class and the parameters the module's calls fill); [] when func is not
    certainly one."""
    constructions = []
    if isinstance(func, cst.Call):
        constructions = [func]
    elif isinstance(func, cst.Name):
        constructions = [v for _, v in a.assigned_values(func) if v is not None]
    elif isinstance(func, cst.Attribute) and isinstance(func.value, cst.Name):
        fdef = a.enclosing_function(func)
        owner = a.method_owner(fdef) if fdef is not None else None
        if owner is not None and a.self_class(func.value) is not None:
            constructions = a.attribute_values(owner, func.attr.value)
    constructions = _through_parameters(a, constructions)
    if not constructions:
        return []
    for c in constructions:
        if not isinstance(c, cst.Call):
            return []
        names = [n for n in a.names(c) if n.startswith(apis.KERAS_LOSS_MODULES)]
        if not names or not names[0].rsplit(".", 1)[1][:1].isupper():
            return []  # a loss function (no reduction) or not a Keras loss
        reduction = find_arg(c, "reduction", None)
        if reduction is not None:
            value = reduction.value
            text = value.evaluated_value if isinstance(value, cst.SimpleString) else None
            if text is None and isinstance(value, cst.Attribute):
                text = value.attr.value.lower()
            if text is None or text.lower() not in apis.KERAS_MEAN_REDUCTIONS:
                return []
    return constructions


def _through_parameters(a: A.Analysis, values, depth: int = 0) -> list:
    """Values with each parameter they name replaced by the arguments the
    module's calls pass for it (``self.loss_fn = loss_fn`` in an overridden
    ``compile(self, ..., loss_fn)``, called as ``gan.compile(loss_fn=...)``).
    A parameter no call binds stays, and decides nothing."""
    out = []
    for v in values:
        params = [o for o, _ in a.assigned_values(v)] if isinstance(v, cst.Name) and depth < 4 else []
        if params and all(isinstance(o, cst.Param) for o in params):
            args = [arg for o in params for _, arg in a.argument_values(o)]
            out += _through_parameters(a, args, depth + 1) if args else [v]
        else:
            out.append(v)
    return out
