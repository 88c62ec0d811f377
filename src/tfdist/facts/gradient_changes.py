"""Where a step changes its gradients between ``tape.gradient`` and the optimizer.

Clipping (by global norm, norm or value), scaling, filtering, averaging a
list of them: anything but handing them on as they are. Followed by binding
(``gradient_tapes.gradient_bindings``: assignments, parameters, helpers'
returns), never by name: another step's ``grads`` is another value.

Handing on as they are: a name, ``zip(...)``, ``list(...)``, ``tuple(...)``
of such, or the gradient call itself; ``return tape.gradient(...), loss``
hands them to the caller, where the same question is asked.
"""
from __future__ import annotations

from typing import List, Optional, Set, Tuple

import libcst as cst
from ..engine import analysis as A
from ..engine.memo import fact
from ..engine.scopes import walk
from .gradient_tapes import calls_under, gradient_bindings
from .keras_models import optimizer_constructions
from .syntax import receiver

#: calls that carry gradients on unchanged
PASS_THROUGH = {"builtins.zip", "builtins.list", "builtins.tuple"}
#: a Keras optimizer's own clipping (Keras 3 BaseOptimizer, tf-keras Optimizer):
#: Keras 3 applies it to each replica's gradients before it sums them
OPTIMIZER_CLIPPING = ("clipnorm", "global_clipnorm", "clipvalue")


@fact
def optimizer_clipping(a: A.Analysis, p: cst.Call) -> Optional[cst.Arg]:
    """The clipping argument of the optimizer construction reaching this
    optimizer step (``Adam(1e-3, global_clipnorm=1.0)``), if any."""
    for call, _type in optimizer_constructions(a, receiver(p), 0) or []:
        if isinstance(call, cst.Call):
            for arg in call.args:
                if arg.keyword is not None and arg.keyword.value in OPTIMIZER_CLIPPING:
                    return arg
    return None


@fact
def receiving(a: A.Analysis, g: cst.Call, applies: Tuple[cst.Call, ...]) -> List[cst.Call]:
    """The optimizer steps among ``applies`` handed the gradients of ``g`` or
    values made from them."""
    held = gradient_bindings(a, (g,))
    return [p for p in applies if g in calls_under(p) or any(
        isinstance(n, cst.Name) and any(id(b.node) in held for b in a.bindings_of(n)) for n in walk(p))]


@fact
def changes(a: A.Analysis, g: cst.Call, applies: Tuple[cst.Call, ...]) -> List[cst.CSTNode]:
    """The nodes where the gradients of ``g`` are changed before the
    optimizer steps ``applies`` receive them: assignments of values made
    from them other than by handing them on, optimizer steps handed more
    than that, ``g``'s own statement when it does more, and the clipping
    argument of a Keras optimizer receiving them (Keras 3 clips each
    replica's share)."""
    held = gradient_bindings(a, (g,))
    own = a.statement_of(g)
    out: List[cst.CSTNode] = []
    for asg in a.assigns:
        targets = [n for t in asg.targets for n in walk(t.target) if isinstance(n, cst.Name)]
        if a.statement_of(asg) is not own and any(id(t) in held for t in targets) \
                and not _hands_on(a, asg.value, held, g):
            out.append(asg)
    for p in receiving(a, g, applies):
        if p.args and not _hands_on(a, p.args[0].value, held, g):
            out.append(p)
    handed = receiving(a, g, applies)
    out += [clip for clip in (optimizer_clipping(a, p) for p in handed) if clip is not None]
    for anc in a.ancestors(g):  # g's own statement
        if anc in handed:
            break  # asked of the optimizer step above
        if isinstance(anc, (cst.Assign, cst.Return)):
            if anc.value is not None and not _hands_on(a, anc.value, held, g):
                out.append(anc)
            break
        if isinstance(anc, (cst.BaseSmallStatement, cst.BaseStatement)):
            out.append(g)
            break
    return out


def _hands_on(a: A.Analysis, expr, held: Set[int], g: cst.Call) -> bool:
    """expr hands the gradients on unchanged (or does not read them)."""
    if expr is g or isinstance(expr, cst.Name):
        return True
    if isinstance(expr, (cst.Tuple, cst.List)):
        return all(_hands_on(a, e.value, held, g) for e in expr.elements)
    if isinstance(expr, cst.Call) and a.is_name(expr, PASS_THROUGH):
        return all(arg.keyword is None and arg.star == "" and _hands_on(a, arg.value, held, g) for arg in expr.args)
    return not _reads(a, expr, held, g)


def _reads(a: A.Analysis, expr, held: Set[int], g: cst.Call) -> bool:
    return any(n is g or (isinstance(n, cst.Name) and any(id(b.node) in held for b in a.bindings_of(n)))
               for n in walk(expr))
