"""What a Keras ``train_step`` does: its optimizer steps, its losses and how each is averaged.

Custom ``train_step`` / ``test_step`` of a Keras Model subclass, for
engines that replicate variables (tf.distribute).

``fit()`` runs a model's ``train_step`` on every replica; the optimizer sums
the replicas' gradients (Keras 3: ``BaseOptimizer.apply`` and
``apply_gradients`` -> ``TFOptimizer._all_reduce_sum_gradients``; tf-keras:
``Optimizer.apply_gradients`` -> ``_all_reduce_sum_gradients``), so each
replica must differentiate its share of the global mean loss, its own mean
divided by the number of replicas -- exactly once. Keras divides some losses
itself under a strategy (read in the installed sources, Keras 3.15 and
tf-keras 2.21):

- ``self.compute_loss(...)`` / ``self.compiled_loss(...)``: Keras 3's
  compiled loss is made of ``Loss`` objects, whose mean reduction calls
  ``scale_loss_for_distribution`` (losses/loss.py ``reduce_values``), and
  the model's added losses go through ``_aggregate_additional_loss`` (also
  scaled); ``compiled_loss`` is ``compute_loss``. tf-keras's
  ``LossesContainer.__call__`` scales every SUM_OVER_BATCH_SIZE/AUTO loss
  and the regularisation losses (``losses_utils.scale_loss_for_distribution``);
  its ``compute_loss`` returns ``compiled_loss``. Already divided: the
  gradient is right as it is, and the value the step reports is multiplied
  back (Keras's own ``train_step`` does the same,
  ``unscale_loss_for_distribution``).
- a Keras 3 ``Loss`` object with a mean reduction called in the step:
  divided (``reduce_values``); tf-keras refuses such an object under a
  strategy outside compile() (``Loss._get_reduction`` raises), and a
  ``tf.keras`` script runs tf-keras on TF_CONFIG workers: converted for
  Keras 3 and warned (the workers would stop with that error).
- ``tf.nn.compute_average_loss`` without ``global_batch_size``: divided by
  the global batch under a strategy, so the replica's share already.
- anything else TensorFlow, Keras or NumPy computes (a mean or a sum of the
  step's own, ``keras.losses.mse``, a Loss object reducing by sum, the
  model's regularisation losses): not divided: the gradient's target becomes
  ``loss / num_replicas_in_sync``. A sum over the replica's batch divided so
  is, summed over the replicas, the original's sum over its batch (the
  per-replica batch is the original's), as a mean is the original's mean.

What a loss is made of is decided by ``facts/losses.loss_kind`` (one answer
for tape loops and train steps): followed through names (``+=`` too), the
model's methods, the module's functions and lambdas (what they return),
parameters (what the module's calls pass) and arithmetic. The step's methods
-- those only ``train_step`` calls (``self.discriminator_step(...)``) -- are
part of it. A gradient with respect to tensors the tape watches (a gradient
penalty) is part of a loss, not a training gradient.

Refused with its line: a call tfdist cannot see into (a callable nothing in
the module binds, an overridden ``compute_loss``), a mix of divided and
undivided terms, a mean of a divided value, gradients not applied by an
optimizer: a wrong division trains wrong silently.
"""
from __future__ import annotations

from typing import List, Optional
import libcst as cst
from .. import apis
from ..engine.memo import fact
from ..engine import analysis as A
from ..engine.scopes import walk
from .keras_models import flavor
from .syntax import find_arg, method_name, receiver
from . import gradient_tapes
from . import kinds
from . import losses
from . import loss_bindings


RULE = kinds.GRADIENT_TAPE
APPLY_METHODS = ("apply_gradients", "apply")

PLAIN, SCALED = "plain", "scaled"


class Refusal(Exception):
    def __init__(self, node, reason: str):
        super().__init__(reason)
        self.node = node
        self.reason = reason


@fact
def steps(a: A.Analysis) -> List[cst.FunctionDef]:
    """``train_step`` / ``test_step`` methods of Keras Model subclasses."""
    return gradient_tapes.keras_steps(a)


@fact
def in_step(a: A.Analysis, node, step) -> bool:
    """node is in the step or in a method of its class only the step runs
    (gradient_tape.keras_step_of)."""
    return gradient_tapes.keras_step_of(a, a.enclosing_function(node)) is step


@fact
def optimizer_applies(a: A.Analysis, step) -> List[cst.Call]:
    out = []
    for c in a.calls:
        if not in_step(a, c, step) or method_name(c) not in APPLY_METHODS:
            continue
        r = receiver(c)
        if a.is_kind(r, A.KERAS_OPTIMIZER) or is_self_attribute(a, r, "optimizer"):
            out.append(c)
    return out


@fact
def is_self_attribute(a: A.Analysis, expr, attr: str) -> bool:
    """``self.<attr>`` in a method of a Keras Model subclass (the model's
    own attribute: ``self.optimizer`` is what compile() was given)."""
    return (isinstance(expr, cst.Attribute) and expr.attr.value == attr and isinstance(expr.value, cst.Name)
            and a.self_class(expr.value) is not None)


CHANGED = ("gradients changed between tape.gradient and the optimizer (clipped, scaled, filtered): under {engine} "
           "the optimizer sums the replicas' gradients inside apply, so this would act on each replica's share "
           "instead of the mean gradient; not converted{alternative}")


@fact
def reaching_names(a: A.Analysis, g: cst.Call, step) -> frozenset:
    """Names in the step holding gradient g or what is made of it: the
    gradients' names (gradient_tapes.gradient_names), loop targets over
    them, lists they are appended to (``pairs.append((g, v))`` in ``for
    grad, var in zip(grads, train_vars)``), followed until nothing is added."""
    names = set(gradient_tapes.gradients_and_loop_targets(a, [g]))
    changed = True
    while changed:
        changed = False
        for loop in a.for_loops:
            if in_step(a, loop, step) and mentions_any(loop.iter, names):
                added = {n.value for n in walk(loop.target) if isinstance(n, cst.Name)} - names
                names |= added
                changed |= bool(added)
        for c in a.calls:
            r = receiver(c)
            if method_name(c) in ("append", "extend") and isinstance(r, cst.Name) and r.value not in names \
                    and in_step(a, c, step) and any(mentions_any(arg.value, names) for arg in c.args):
                names.add(r.value)
                changed = True
        for asg in a.assigns:
            targets = {n.value for t in asg.targets for n in walk(t.target) if isinstance(n, cst.Name)}
            if targets - names and in_step(a, asg, step) and mentions_any(asg.value, names):
                names |= targets
                changed = True
    return frozenset(names)


def mentions_any(node, names) -> bool:
    return any(isinstance(n, cst.Name) and n.value in names for n in walk(node))


@fact
def of_watched_inputs(a: A.Analysis, w: cst.With, tape: str, g: cst.Call) -> bool:
    """``tape.gradient(pred, [interpolated])`` of tensors the tape is told to
    watch (``tape.watch(interpolated)``) in its block: a gradient with respect
    to inputs (a WGAN-GP's penalty), which no optimizer applies."""
    sources = find_arg(g, "sources", 1)
    if sources is None:
        return False
    value = sources.value
    names = [e.value for e in value.elements] if isinstance(value, (cst.List, cst.Tuple)) else [value]
    watched = {n.args[0].value.value for n in walk(w.body) if isinstance(n, cst.Call) and method_name(n) == "watch"
               and isinstance(receiver(n), cst.Name) and receiver(n).value == tape and n.args
               and isinstance(n.args[0].value, cst.Name)}
    return bool(names) and all(isinstance(n, cst.Name) and n.value in watched for n in names)


@fact
def in_scaled_assignment(a: A.Analysis, call: cst.Call, step) -> bool:
    """The call is (a term of) the value of an assignment Keras divides as a
    whole (``d_loss = loss_fn(ones, real) + loss_fn(zeros, fake)``): what
    the step reports of it is handled with that assignment."""
    node = a.parent(call)
    while isinstance(node, cst.BinaryOperation):
        node = a.parent(node)
    return isinstance(node, cst.Assign) and direct_kind(a, node.value, step) == SCALED


@fact
def read_elsewhere(a: A.Analysis, asg: cst.Assign, step, skip) -> bool:
    """Is the name asg binds read in the step (the function of the step
    holding it: the step or a method only it runs), other than at ``skip``?"""
    target = asg.targets[0].target if isinstance(asg, cst.Assign) else asg  # or the Name a tuple unpacks
    for n in walk(a.enclosing_function(asg) or step):
        if isinstance(n, cst.Name) and n.value == target.value and n is not target and n is not skip \
                and _plain_read(a, n) and any(origin is asg for origin, _ in a.assigned_values(n)):
            return True
    return False


@fact
def feeding_statements(a: A.Analysis, step, targets) -> frozenset:
    """ids of the statements of the step whose values reach a gradient's
    target (``targets``: the target expressions): its bindings, the bindings
    of the names they read, and so on. A Keras-divided value read there must
    stay divided; only the step's other reads report it."""
    out, todo = set(), [n for t in targets for n in walk(t) if isinstance(n, cst.Name)]
    seen = set()
    while todo:
        name = todo.pop()
        if id(name) in seen:
            continue
        seen.add(id(name))
        for origin, value in a.assigned_values(name):
            stmt = a.statement_of(origin)
            if stmt is None or not in_step(a, stmt, step) or id(stmt) in out:
                continue
            out.add(id(stmt))
            parent = a.parent(origin) if isinstance(origin, cst.Name) else None
            read = value if value is not None else parent.value if isinstance(parent, cst.AugAssign) else None
            if isinstance(parent, cst.AugAssign):
                todo.append(parent.target)  # the value before it
            if read is not None:
                todo += [n for n in walk(read) if isinstance(n, cst.Name)]
    return frozenset(out)


def _plain_read(a: A.Analysis, n: cst.Name) -> bool:
    """n reads its name and binds nothing (not another assignment's target, not ``n += ...``)."""
    return a.scopes.is_load(n) and not isinstance(a.parent(n), cst.AugAssign)


@fact
def reporting_reads(a: A.Analysis, asg: cst.Assign, step, feeding: frozenset, skip=None) -> List[cst.Name]:
    """The reads of the name asg binds, in the step, outside the statements
    feeding a gradient (what the step reports of it), other than ``skip``."""
    target = asg.targets[0].target
    out = []
    for n in walk(a.enclosing_function(asg) or step):
        if isinstance(n, cst.Name) and n.value == target.value and n is not target and n is not skip \
                and _plain_read(a, n) and any(origin is asg for origin, _ in a.assigned_values(n)) \
                and id(a.statement_of(n)) not in feeding:
            out.append(n)
    return out


@fact
def single_assignment(a: A.Analysis, expr, step, divided: bool = False) -> Optional[cst.CSTNode]:
    """The one binding in the step (an assignment, or the name of a tuple it unpacks) of the loss
    ``expr`` names, when Keras divides what it binds (``divided``: or the terms it does not
    divide are divided by the conversion); else None."""
    if not isinstance(expr, cst.Name):
        return None
    bindings = a.assigned_values(expr)
    if len(bindings) != 1:
        return None
    origin, value = bindings[0]
    if value is None and isinstance(origin, cst.Name) and isinstance(a.statement_of(origin), cst.SimpleStatementLine):
        # ``total_loss, labels, logits = self._calculate_loss(data)``: the element it unpacks
        elements = a.tuple_element_values(origin)
        value = elements[0] if len(elements) == 1 else None
        if value is None or not isinstance(a.statement_of(origin).body[0], cst.Assign):
            return None
    elif not isinstance(origin, cst.Assign) or value is None:
        return None
    if not in_step(a, origin, step):
        return None
    if direct_kind(a, value, step, follow=True) != SCALED and losses.loss_kind(a, value) != "keras" \
            and not (divided and losses.loss_kind(a, value) == "mixed"):
        return None
    return origin


@fact
def direct_kind(a: A.Analysis, value, step, follow: bool = False) -> Optional[str]:
    """SCALED when the value is itself a call Keras divides, or a sum of
    such calls (``loss_fn(ones, real) + loss_fn(zeros, fake)``), scaled by
    Python numbers; else None."""
    if isinstance(value, cst.Call) and _call_kind(a, value, step, follow) == SCALED:
        return SCALED
    if isinstance(value, cst.BinaryOperation):
        if isinstance(value.operator, (cst.Add, cst.Subtract)):
            sides = [direct_kind(a, value.left, step, follow), direct_kind(a, value.right, step, follow)]
            return SCALED if sides == [SCALED, SCALED] else None
        if isinstance(value.operator, (cst.Multiply, cst.Divide)):
            pairs = ((value.left, value.right), (value.right, value.left)) if isinstance(value.operator, cst.Multiply) \
                else ((value.left, value.right),)
            for side, other in pairs:
                if _python_number(a, other):
                    return direct_kind(a, side, step, follow)
    return None


@fact
def mean_kind(a: A.Analysis, expr, step) -> str:
    """PLAIN (nothing in it Keras divides: a mean or sum the step computes,
    ``keras.losses.mse``, a Loss object reducing by sum, ``model.losses``),
    SCALED (made of values Keras divides: :func:`losses.call_kind`), or a
    Refusal naming what cannot be decided (:func:`losses.loss_kind`)."""
    kind = losses.loss_kind(a, expr)
    if kind == "plain":
        return PLAIN
    if kind == "keras":
        return SCALED
    node = losses.undecided_term(a, expr) or expr
    if kind == "mixed" and isinstance(node, cst.Call):
        raise Refusal(node, a.code(node.func) + "(...) of a loss Keras already divides by the number of replicas under "
                      "{engine}: not converted{alternative}")
    if kind == "mixed":
        raise Refusal(node, "the loss of a custom " + step.name.value + " adds terms Keras divides by the number of "
                      "replicas under {engine} (compute_loss, Loss objects) to terms it does not (a mean of its own): "
                      "not converted{alternative}")
    func = node.func if isinstance(node, cst.Call) else None
    if isinstance(func, cst.Attribute) and func.attr.value in losses.SCALED_METHODS:
        raise Refusal(node, "self." + func.attr.value + " is overridden in this module: tfdist cannot tell "
                      "whether its loss is divided by the number of replicas under {engine}; not converted{alternative}")
    raise Refusal(node, "the loss " + a.code(node) + " of a custom " + step.name.value + ": tfdist cannot tell whether "
                  "Keras already divides it by the number of replicas under {engine} (known: computed by TensorFlow, "
                  "Keras or NumPy, self.compute_loss / self.compiled_loss, Keras Loss objects, functions of this "
                  "module); not converted{alternative}")


def _python_number(a: A.Analysis, expr, depth: int = 0) -> bool:
    """A weight that is a Python number (it scales a loss without changing
    who divides it): a literal, or a name or ``self`` attribute bound only
    to such, through the parameters the module's calls fill
    (``self.gp_weight = gp_weight`` of ``MuseGAN(..., gp_weight=GP_WEIGHT)``)."""
    if depth > 6:
        return False
    if isinstance(expr, (cst.Integer, cst.Float)):
        return True
    if isinstance(expr, cst.UnaryOperation) and isinstance(expr.operator, (cst.Minus, cst.Plus)):
        return _python_number(a, expr.expression, depth + 1)
    values = []
    if isinstance(expr, cst.Name):
        bound = a.assigned_values(expr)
        if bound and all(isinstance(origin, cst.Param) for origin, _ in bound):
            # what the calls pass, and the default a call may leave it at
            values = [arg for origin, _ in bound for _, arg in a.argument_values(origin)] + [
                origin.default for origin, _ in bound if origin.default is not None]
        elif bound and all(value is not None for _, value in bound):
            values = [value for _, value in bound]
    elif isinstance(expr, cst.Attribute) and isinstance(expr.value, cst.Name):
        owner = a.self_class(expr.value)
        if owner is not None:
            values = a.attribute_values(owner, expr.attr.value)
    return bool(values) and all(_python_number(a, v, depth + 1) for v in values)


def _call_kind(a: A.Analysis, call: cst.Call, step, follow: bool = False) -> Optional[str]:
    """SCALED for a call Keras divides (``follow``: or a function or method
    of the module returning only such); else None."""
    kind = losses.call_kind(a, call)
    if kind == "keras":
        return SCALED
    if kind == "module" and follow:
        returns = loss_bindings.call_returns(a, call)
        if all(direct_kind(a, r, step, follow) == SCALED for r in returns):
            return SCALED
    return None


@fact
def only_called_in(a: A.Analysis, calls: List[cst.Call]) -> Optional[List[cst.Call]]:
    """The constructions of the loss objects ``calls`` call, when each is
    built here with its arguments named (a positional one may be the
    reduction) and reaches nothing but these calls: handed to a method or
    stored on ``self``, the attribute it is stored in (``self.loss_fn``) read
    only by them. None otherwise."""
    found: List[cst.Call] = []
    called = {id(c.func) for c in calls}
    attributes = set()
    for c in calls:
        if not (isinstance(c.func, cst.Attribute) and isinstance(c.func.value, cst.Name) and c.func.value.value == "self"):
            return None
        attributes.add(c.func.attr.value)
        for k in losses.keras_loss_constructions(a, c.func):
            if any(arg.keyword is None for arg in k.args) or not any(
                    n.startswith(apis.KERAS_LOSS_MODULES) for n in a.names(k)):
                return None  # a positional argument may be the reduction; a class of this module may drop it
            holder = a.parent(k)
            if isinstance(holder, cst.Arg):
                pass  # handed to the class's own compile(loss_fn=...): stored on self there
            elif isinstance(holder, cst.Assign) and len(holder.targets) == 1 \
                    and isinstance(holder.targets[0].target, cst.Attribute) \
                    and holder.targets[0].target.attr.value in attributes:
                pass  # self.loss_fn = keras.losses.BinaryCrossentropy()
            else:
                return None
            if all(k is not f for f in found):
                found.append(k)
    for n in walk(a.module):
        if isinstance(n, cst.Attribute) and n.attr.value in attributes and id(n) not in called:
            parent = a.parent(n)
            if not (isinstance(parent, cst.AssignTarget) and parent.target is n):
                return None  # read elsewhere: its values would change there too
            value = a.parent(parent).value if isinstance(a.parent(parent), cst.Assign) else None
            fdef = a.enclosing_function(n)
            if isinstance(value, cst.Name) and fdef is not None and sum(
                    1 for m in walk(fdef.body) if isinstance(m, cst.Name) and m.value == value.value
                    and not (isinstance(a.parent(m), cst.Attribute) and a.parent(m).attr is m)) != 1:
                return None  # the parameter it is stored from is used there too (super().compile(loss=loss_fn))
    return found or None


@fact
def keras_flavor(a: A.Analysis) -> str:
    return flavor(a)
