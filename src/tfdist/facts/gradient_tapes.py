"""What a GradientTape loop is: its tapes, gradient calls, the optimizer steps that apply them and
the variables they update.

TF2 custom training loops with ``tf.GradientTape``.

Per Horovod's TF2 recipe: every tape whose gradients are applied becomes a
``DistributedGradientTape`` (right before its first ``gradient`` call); after
each optimizer's first ``apply_gradients`` the variables it updated and its
own slots are broadcast from rank 0 -- exactly once, also inside a
``@tf.function`` (see the backend); the learning rate is scaled and the
datasets that feed the training loop are sharded.
"""
from __future__ import annotations

from typing import Dict, List, Optional, Set, Tuple
import libcst as cst
from .. import apis
from ..engine.memo import fact
from ..engine import analysis as A
from ..engine import patterns as P
from ..engine import dataflow
from ..engine.analysis import returned_values
from ..engine.findings import Evidence
from ..engine.scopes import iter_children, walk
from .syntax import calls_in, find_arg, is_optimizer_step, mentions, method_name, receiver
from . import kinds


RULE = kinds.GRADIENT_TAPE


# ------------------------------------------------------------------ analysis
@fact
def tapes(a: A.Analysis) -> List[Tuple[cst.With, cst.WithItem, str]]:
    out = []
    for w in a.withs:
        for item in w.items:
            if isinstance(item.item, cst.Call) and a.is_name(item.item, {apis.GRADIENT_TAPE}) \
                    and item.asname is not None and isinstance(item.asname.name, cst.Name):
                out.append((w, item, item.asname.name.value))
    return out


def _scope(a: A.Analysis, node) -> Optional[cst.FunctionDef]:
    return a.enclosing_function(node)


@fact
def gradient_calls(a: A.Analysis, w: cst.With, tape: str) -> List[cst.Call]:
    """The ``tape.gradient`` calls of the tape this with-block binds: those
    its binding reaches (two blocks ``with tf.GradientTape() as tape`` in
    one step, a GAN's discriminator and generator, each own the calls
    after them, up to the next)."""
    scope = _scope(a, w)
    return [c for c in a.calls if method_name(c) == "gradient" and isinstance(receiver(c), cst.Name)
            and receiver(c).value == tape and _scope(a, c) is scope and a.line(c) >= a.line(w)
            and _tape_reaches(a, w, receiver(c))]


def _tape_reaches(a: A.Analysis, w: cst.With, use: cst.Name) -> bool:
    """Does the tape bound by ``w`` reach this use of its name? A binding
    made by another with-block's ``as`` that certainly runs later hides it."""
    items = {id(item.asname.name) for item in w.items if item.asname is not None}
    return any(id(b.node) in items for b in a.bindings_of(use))


@fact
def apply_calls(a: A.Analysis) -> List[cst.Call]:
    """TF2 optimizer steps: apply_gradients, or a Keras 3 optimizer's apply."""
    return [c for c in a.calls if is_optimizer_step(a, c) and not a.is_kind(receiver(c), A.TF1_OPTIMIZER)]


@fact
def applied_variables(a: A.Analysis, call: cst.Call) -> Optional[cst.BaseExpression]:
    """The expression naming the variables an optimizer step updates
    (``vars`` in ``apply_gradients(zip(grads, vars))`` / ``apply(grads, vars)``)."""
    keyword, position, zipped = apis.OPTIMIZER_APPLY_METHODS[method_name(call)]
    arg = find_arg(call, keyword, position)
    if arg is None:
        return None
    return _zip_vars(a, arg.value) if zipped else arg.value


def _targets(stmt) -> Set[str]:
    names: Set[str] = set()
    if isinstance(stmt, cst.Assign):
        for t in stmt.targets:
            for n in _names_in_target(t.target):
                names.add(n)
    return names


def _names_in_target(t) -> List[str]:
    if isinstance(t, cst.Name):
        return [t.value]
    if isinstance(t, (cst.Tuple, cst.List)):
        return [n for e in t.elements for n in _names_in_target(e.value)]
    return []


@fact
def gradient_names(a: A.Analysis, grad_calls: List[cst.Call]) -> Set[str]:
    """Names holding these gradients, or values derived from them."""
    names: Set[str] = set()
    returning: Set[str] = set()
    for c in grad_calls:
        for anc in a.ancestors(c):
            if isinstance(anc, cst.Assign):
                names |= _targets(anc)
                break
            if isinstance(anc, cst.Return):
                f = a.enclosing_function(c)
                if f is not None:
                    returning.add(f.name.value)
                break
            if isinstance(anc, cst.BaseStatement):
                break
    assigns = a.assigns
    for call in a.calls:  # grads = helper_that_returns_gradients(...)
        if isinstance(call.func, cst.Name) and call.func.value in returning:
            for anc in a.ancestors(call):
                if isinstance(anc, cst.Assign):
                    names |= _targets(anc)
                    break
                if isinstance(anc, cst.BaseStatement):
                    break
    changed = True
    while changed:  # derived values: clipped, zipped, ...
        changed = False
        for asg in assigns:
            t = _targets(asg)
            if t - names and mentions(asg.value, names):
                names |= t
                changed = True
    return names


@fact
def applied(a: A.Analysis, grad_calls: List[cst.Call]) -> bool:
    """Are these gradients applied, by an optimizer or by hand?"""
    return bool(grad_calls) and (optimizer_applied(a, grad_calls) or bool(manual_updates(a, grad_calls)))


@fact
def gradients_and_loop_targets(a: A.Analysis, grad_calls: List[cst.Call]) -> Set[str]:
    """gradient_names, plus the targets of for loops over them (``g`` in
    ``for g, v in zip(grads, variables)``)."""
    names = gradient_names(a, grad_calls)
    for loop in a.for_loops:
        if mentions(loop.iter, names):
            names |= set(_names_in_target(loop.target))
    return names


@fact
def manual_updates(a: A.Analysis, grad_calls: List[cst.Call]) -> List[cst.Call]:
    """A step written by hand: variables updated with these gradients by
    their own methods (``w.assign_sub(lr * dw)``, ``v.assign(v - lr * g)``,
    also in ``for g, v in zip(grads, variables)``), no optimizer."""
    if not grad_calls:
        return []
    names = gradients_and_loop_targets(a, grad_calls)
    return [c for c in a.calls if method_name(c) in apis.VARIABLE_UPDATE_METHODS and isinstance(c.func, cst.Attribute)
            and c.args and (mentions(c.args[0].value, names) or any(g in calls_under(c) for g in grad_calls))]


@fact
def update_rate(a: A.Analysis, update: cst.Call, gradients: frozenset) -> Optional[cst.BaseExpression]:
    """The factor a hand-written update multiplies the gradient by: ``lr`` in
    ``w.assign_sub(lr * dw)`` or ``w.assign(w - lr * dw)``."""
    step = update.args[0].value
    if method_name(update) == "assign":
        if not (isinstance(step, cst.BinaryOperation) and isinstance(step.operator, cst.Subtract)):
            return None
        step = step.right
    if not (isinstance(step, cst.BinaryOperation) and isinstance(step.operator, cst.Multiply)):
        return None
    sides = [step.left, step.right]
    with_gradient = [mentions(s, gradients) for s in sides]
    if with_gradient.count(True) != 1:
        return None
    rate = sides[with_gradient.index(False)]
    return rate if isinstance(rate, (cst.Name, cst.Float, cst.Integer, cst.Attribute)) else None


def calls_under(node) -> List[cst.Call]:
    return calls_in(node)


@fact
def keras_step_of(a: A.Analysis, fdef: Optional[cst.FunctionDef]) -> Optional[cst.FunctionDef]:
    """The ``train_step`` / ``test_step`` of a Keras Model subclass that
    ``fdef`` runs as part of: the step itself, or a method of its class the
    step calls (``self.discriminator_train_step(batch_size, images)``,
    transitively) that nothing else calls -- fit() runs it on every replica
    with the step. None otherwise."""
    if fdef is None:
        return None
    return _keras_step_functions(a).get(id(fdef))


#: the methods fit() / evaluate() run for a Keras Model subclass, per batch
STEP_METHODS = ("train_step", "test_step")


@fact
def keras_steps(a: A.Analysis) -> List[cst.FunctionDef]:
    """``train_step`` / ``test_step`` methods of Keras Model subclasses that
    Keras runs: not one the script calls itself (``self.train_step(x)`` in
    its own loop) on a class no fit() / evaluate() / train_on_batch() is
    seen to run -- that is the script's own step, a GradientTape loop."""
    out = []
    for name in STEP_METHODS:
        for f in a.functions.get(name, []):
            owner = a.method_owner(f)
            fact = a.classes.get(next(iter(a.qualified(owner.name)), owner.name.value)) if owner is not None else None
            if fact and A.MODEL in fact.kinds and not _run_by_the_script_alone(a, f, owner):
                out.append(f)
    return out


#: Keras methods running a model's train_step / test_step per batch
KERAS_STEP_RUNNERS = {"fit", "fit_generator", "train_on_batch", "evaluate", "evaluate_generator", "test_on_batch"}


def _run_by_the_script_alone(a: A.Analysis, step: cst.FunctionDef, owner: cst.ClassDef) -> bool:
    if not any(step in a.methods_called(c) for c in a.calls):
        return False
    for c in a.calls:
        if method_name(c) in KERAS_STEP_RUNNERS:
            recv = receiver(c)
            classes = a.instance_classes(recv) if recv is not None else []
            if not classes or any(a.is_subclass_or_same(cd, owner) for cd in classes):
                return False  # fit() on this class, or on a model tfdist cannot place: Keras may run the step
    return True


@fact
def _keras_step_functions(a: A.Analysis) -> Dict[int, cst.FunctionDef]:
    steps = keras_steps(a)
    callers: Dict[int, Set[int]] = {}  # method -> the functions calling it
    methods: Dict[int, cst.FunctionDef] = {}
    for c in a.calls:
        for f in a.methods_called(c):
            caller = a.enclosing_function(c)
            callers.setdefault(id(f), set()).add(id(caller) if caller is not None else 0)
            methods[id(f)] = f
    out: Dict[int, cst.FunctionDef] = {id(s): s for s in steps}
    changed = True
    while changed:  # a method all of whose callers run as part of one step runs as part of it
        changed = False
        for key, f in methods.items():
            if key in out:
                continue
            owners = {id(out[c]) if c in out else None for c in callers[key]}
            if len(owners) == 1 and None not in owners:
                out[key] = out[next(iter(callers[key]))]
                changed = True
    return out


@fact
def in_keras_train_step(a: A.Analysis, node) -> bool:
    return keras_step_of(a, a.enclosing_function(node)) is not None


@fact
def training_tapes(a: A.Analysis, keras_train_step: bool = False):
    """Tapes whose gradients an optimizer applies (in custom Keras
    ``train_step`` methods only, or only outside them)."""
    out = []
    for w, item, name in tapes(a):
        if in_keras_train_step(a, w) != keras_train_step:
            continue
        calls = gradient_calls(a, w, name)
        if applied(a, calls):
            out.append((w, item, name, calls))
    return out


@fact
def detect(a: A.Analysis) -> List[Evidence]:
    return [Evidence(P.TAPE, f"with {a.code(item.item)} as {name}: gradients applied "
                              + ("by hand" if manual_updates(a, calls) and not optimizer_applied(a, calls)
                                 else "by an optimizer"), a.line(w))
            for w, item, name, calls in training_tapes(a)] + [
        Evidence(P.TAPE, f"GradientTape at line {a.line(w)}: gradients applied by a TF1 optimizer "
                         f"({a.code(receiver(p))}.{method_name(p)}, line {a.line(p)})", a.line(p))
        for w, p in tf1_optimizer_tapes(a)]


@fact
def optimizer_applied(a: A.Analysis, grad_calls: List[cst.Call]) -> bool:
    """Does an optimizer apply these gradients (else they are applied by hand,
    or not at all)? Followed by binding: an apply reading ``grads`` reads
    these only where a binding holding them reaches it (another function's
    ``grads`` -- a sampler's gradient with respect to its inputs -- is
    another variable)."""
    return bool(applies_reading(a, tuple(grad_calls), tuple(apply_calls(a))))


@fact
def applies_reading(a: A.Analysis, grad_calls: Tuple[cst.Call, ...], applies: Tuple[cst.Call, ...]) -> List[cst.Call]:
    """Those of ``applies`` that read these gradients (directly, or through
    a binding holding them)."""
    # training_tapes asks for every tape, and several rules ask for training_tapes: held once per module
    held = gradient_bindings(a, grad_calls)
    grad_ids = frozenset(id(g) for g in grad_calls)
    return [p for p in applies if _reads_gradients(a, p, grad_ids, held)]


@fact
def tf1_optimizer_tapes(a: A.Analysis) -> List[Tuple[cst.With, cst.Call]]:
    """Tapes whose gradients only a TF1 optimizer applies
    (``tf.compat.v1.train.MomentumOptimizer(...).apply_gradients(...)`` in
    eager TF2 code), with that apply: no TF2 optimizer and no update by hand
    takes them, so they are no training tape, yet the file trains."""
    tf1 = tuple(c for c in a.calls if method_name(c) in apis.OPTIMIZER_APPLY_METHODS
                and a.is_kind(receiver(c), A.TF1_OPTIMIZER))
    out = []
    for w, _item, name in tapes(a) if tf1 else ():
        calls = gradient_calls(a, w, name)
        if calls and not applied(a, calls):
            reading = applies_reading(a, tuple(calls), tf1)
            if reading:
                out.append((w, reading[0]))
    return out


@fact
def one_variable(a: A.Analysis, expr) -> bool:
    """Does ``expr`` hold one tf.Variable, not a list of them (``image`` in
    ``tape.gradient(loss, image)``)? Followed through assignments and the
    arguments its parameter's calls pass, every value a ``tf.Variable(...)``."""
    return _one_variable(a, expr, 0)


def _one_variable(a: A.Analysis, expr, depth: int) -> bool:
    if isinstance(expr, cst.Call):
        return a.is_name(expr, {apis.TF_VARIABLE})
    if not isinstance(expr, cst.Name) or depth > 4:
        return False
    values = []
    for origin, value in a.assigned_values(expr):
        passed = [arg for _, arg in a.argument_values(origin)] if value is None and isinstance(origin, cst.Param) else []
        if value is None and not passed:
            return False
        values += [value] if value is not None else passed
    return bool(values) and all(_one_variable(a, v, depth + 1) for v in values)


@fact
def gradient_bindings(a: A.Analysis, grad_calls: Tuple[cst.Call, ...]) -> Set[int]:
    """The binding nodes (targets) that hold these gradients or values
    derived from them, to a fixed point: names bound to a value reading the
    gradient calls or such a binding (an assignment, a for loop over it, a
    helper returning one: ``grad = backprop(x, y)``), and a list such a
    value is appended to (``tower_grads.append(grad)``)."""
    held: Set[int] = set()
    grad_ids = frozenset(id(g) for g in grad_calls)

    def reads(node) -> bool:
        return _reads_gradients(a, node, grad_ids, held)

    def hold(targets) -> bool:
        new = {id(t) for t in targets} - held
        held.update(new)
        return bool(new)

    changed = True
    while changed:
        changed = False
        for asg in a.assigns:
            targets = [n for t in asg.targets for n in walk(t.target) if isinstance(n, cst.Name)]
            if any(id(t) not in held for t in targets) and reads(asg.value):
                changed |= hold(targets)
        for loop in a.for_loops:
            targets = [n for n in walk(loop.target) if isinstance(n, cst.Name)]
            if any(id(t) not in held for t in targets) and reads(loop.iter):
                changed |= hold(targets)
        for c in a.calls:
            if method_name(c) in apis.CONTAINER_MUTATORS and isinstance(receiver(c), cst.Name) and c.args \
                    and any(reads(arg.value) for arg in c.args):
                changed |= hold(b.node for b in a.bindings_of(receiver(c)))
        for fdef in (f for fs in a.functions.values() for f in fs):
            for param in fdef.params.params:  # update_weights(gradients, model.weights): its parameter
                if id(param) not in held and any(reads(arg) for _, arg in a.argument_values(param)):
                    changed |= hold([param, param.name])  # the scope walk binds the Param node
    return held


def _zip_vars(a: A.Analysis, expr) -> Optional[cst.BaseExpression]:
    if isinstance(expr, cst.Call):
        if isinstance(expr.func, cst.Name) and expr.func.value == "zip" and len(expr.args) == 2:
            return expr.args[1].value
        if isinstance(expr.func, cst.Name) and expr.func.value == "list" and len(expr.args) == 1:
            return _zip_vars(a, expr.args[0].value)
    if isinstance(expr, cst.Name):
        bound = a.assigned_values(expr)
        if len(bound) == 1 and bound[0][1] is not None:
            return _zip_vars(a, bound[0][1])
    return None


def _unders(node, grad_ids):
    """node's subtree, without other tapes' gradient calls: a gradient of
    something made from these gradients (a sampler's output fed to the
    training loss) is a new gradient, not a value derived from them."""
    stack = [node]
    while stack:
        n = stack.pop()
        if isinstance(n, cst.Call) and method_name(n) == "gradient" and id(n) not in grad_ids:
            continue
        yield n
        stack.extend(reversed(list(iter_children(n))))


def _reads_gradients(a: A.Analysis, node, grad_ids, held: Set[int], depth: int = 0) -> bool:
    """Does evaluating node read the gradient calls ``grad_ids``: itself, a
    name whose binding is in ``held``, or a local helper or a method returning them
    (``loss, grads = helper(...)``, ``zip(helper(...), variables)``, ``self.compute_gradients(x)``)?"""
    for n in _unders(node, grad_ids):
        if id(n) in grad_ids:
            return True
        if isinstance(n, cst.Name) and any(id(b.node) in held for b in a.bindings_of(n)):
            return True
        if depth < 3 and isinstance(n, cst.Call) and isinstance(n.func, (cst.Name, cst.Attribute)) and any(
                _reads_gradients(a, r, grad_ids, held, depth + 1) for f in dataflow.callees(a, n)
                for r in returned_values(f)):
            return True
    return False
