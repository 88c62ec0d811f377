"""TF2 custom training loops with ``tf.GradientTape``.

Per Horovod's TF2 recipe: every tape whose gradients are applied becomes a
``DistributedGradientTape`` (right before its first ``gradient`` call); after
each optimizer's first ``apply_gradients`` the variables it updated and its
own slots are broadcast from rank 0 -- exactly once, also inside a
``@tf.function`` (see the backend); the learning rate is scaled and the
datasets that feed the training loop are sharded.
"""
from __future__ import annotations

from . import kinds

import weakref

from typing import Dict, List, Optional, Sequence, Set, Tuple

import libcst as cst

from .. import apis
from ..engine import analysis as A
from ..engine import patterns as P
from ..engine import dataflow
from ..engine.analysis import returned_values
from ..engine.findings import Evidence
from . import data_division, dataset_flow, iterator_classes, lr_scaling, samplers, step_loops, tf1_common, warmup
from ..engine.scopes import iter_children, walk
from .common import find_arg, is_optimizer_step, method_name, mentions, receiver

PATTERN = P.TAPE
RULE = kinds.GRADIENT_TAPE


# ------------------------------------------------------------------ analysis
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


def optimizer_identity(a: A.Analysis, expr) -> object:
    """What an optimizer expression is bound to: the construction(s) its
    value comes from (``self.opt`` of two classes are two optimizers). Its
    text, scoped by the class it is read in, only when nothing is known."""
    calls = sorted({id(t.call): t.call for t in a.types(expr) if t.kind == A.KERAS_OPTIMIZER and t.call is not None}.items())
    if calls:
        return tuple(k for k, _ in calls)
    f = a.enclosing_function(expr)
    owner = a.method_owner(f) if f is not None else None
    return (a.code(expr), id(owner) if owner is not None else None)


def apply_calls(a: A.Analysis) -> List[cst.Call]:
    """TF2 optimizer steps: apply_gradients, or a Keras 3 optimizer's apply."""
    return [c for c in a.calls if is_optimizer_step(a, c) and not a.is_kind(receiver(c), A.TF1_OPTIMIZER)]


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


def applied(a: A.Analysis, grad_calls: List[cst.Call]) -> bool:
    """Are these gradients applied, by an optimizer or by hand?"""
    return bool(grad_calls) and (optimizer_applied(a, grad_calls) or bool(manual_updates(a, grad_calls)))


def _gradients_and_loop_targets(a: A.Analysis, grad_calls: List[cst.Call]) -> Set[str]:
    """gradient_names, plus the targets of for loops over them (``g`` in
    ``for g, v in zip(grads, variables)``)."""
    names = gradient_names(a, grad_calls)
    for loop in a.for_loops:
        if mentions(loop.iter, names):
            names |= set(_names_in_target(loop.target))
    return names


def manual_updates(a: A.Analysis, grad_calls: List[cst.Call]) -> List[cst.Call]:
    """A step written by hand: variables updated with these gradients by
    their own methods (``w.assign_sub(lr * dw)``, ``v.assign(v - lr * g)``,
    also in ``for g, v in zip(grads, variables)``), no optimizer."""
    if not grad_calls:
        return []
    names = _gradients_and_loop_targets(a, grad_calls)
    return [c for c in a.calls if method_name(c) in apis.VARIABLE_UPDATE_METHODS and isinstance(c.func, cst.Attribute)
            and c.args and (mentions(c.args[0].value, names) or any(g in _calls_under(c) for g in grad_calls))]


def _calls_under(node) -> List[cst.Call]:
    from .common import calls_in
    return calls_in(node)


_STEP_FUNCTIONS: "weakref.WeakKeyDictionary" = weakref.WeakKeyDictionary()


def keras_step_of(a: A.Analysis, fdef: Optional[cst.FunctionDef]) -> Optional[cst.FunctionDef]:
    """The ``train_step`` / ``test_step`` of a Keras Model subclass that
    ``fdef`` runs as part of: the step itself, or a method of its class the
    step calls (``self.discriminator_train_step(batch_size, images)``,
    transitively) that nothing else calls -- fit() runs it on every replica
    with the step. None otherwise."""
    if fdef is None:
        return None
    table = _STEP_FUNCTIONS.get(a)
    if table is None:
        table = _STEP_FUNCTIONS[a] = _keras_step_functions(a)
    return table.get(id(fdef))


#: the methods fit() / evaluate() run for a Keras Model subclass, per batch
STEP_METHODS = ("train_step", "test_step")


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
    from .common import method_name, receiver
    if not any(step in a.methods_called(c) for c in a.calls):
        return False
    for c in a.calls:
        if method_name(c) in KERAS_STEP_RUNNERS:
            recv = receiver(c)
            classes = a.instance_classes(recv) if recv is not None else []
            if not classes or any(a.is_subclass_or_same(cd, owner) for cd in classes):
                return False  # fit() on this class, or on a model tfdist cannot place: Keras may run the step
    return True


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


def in_keras_train_step(a: A.Analysis, node) -> bool:
    return keras_step_of(a, a.enclosing_function(node)) is not None


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


def detect(a: A.Analysis) -> List[Evidence]:
    return [Evidence(P.TAPE, f"with {a.code(item.item)} as {name}: gradients applied "
                              + ("by hand" if manual_updates(a, calls) and not optimizer_applied(a, calls)
                                 else "by an optimizer"), a.line(w))
            for w, item, name, calls in training_tapes(a)]


_GRADIENT_BINDINGS: "weakref.WeakKeyDictionary" = weakref.WeakKeyDictionary()


def optimizer_applied(a: A.Analysis, grad_calls: List[cst.Call]) -> bool:
    """Does an optimizer apply these gradients (else they are applied by hand,
    or not at all)? Followed by binding: an apply reading ``grads`` reads
    these only where a binding holding them reaches it (another function's
    ``grads`` -- a sampler's gradient with respect to its inputs -- is
    another variable)."""
    key = frozenset(id(g) for g in grad_calls)
    cached = _GRADIENT_BINDINGS.setdefault(a, {})
    if key not in cached:  # training_tapes asks for every tape, and several rules ask for training_tapes
        cached[key] = _gradient_bindings(a, grad_calls)
    held = cached[key]
    return any(any(g in _calls_under(p) for g in grad_calls) or any(
        isinstance(n, cst.Name) and any(id(b.node) in held for b in a.bindings_of(n))
        for n in walk(p)) for p in apply_calls(a))


def _gradient_bindings(a: A.Analysis, grad_calls: List[cst.Call]) -> Set[int]:
    """The binding nodes (targets) that hold these gradients or values
    derived from them, to a fixed point: names bound to a value reading the
    gradient calls or such a binding (an assignment, a for loop over it, a
    helper returning one: ``grad = backprop(x, y)``), and a list such a
    value is appended to (``tower_grads.append(grad)``)."""
    held: Set[int] = set()
    grad_ids = {id(g) for g in grad_calls}

    def unders(node):
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

    def reads(node, depth: int = 0) -> bool:
        for n in unders(node):
            if id(n) in grad_ids:
                return True
            if isinstance(n, cst.Name) and any(id(b.node) in held for b in a.bindings_of(n)):
                return True
            if depth < 3 and isinstance(n, cst.Call) and isinstance(n.func, cst.Name) and any(
                    reads(r, depth + 1) for f in dataflow.callees(a, n) for r in returned_values(f)):
                return True  # loss, grads = helper_returning_gradients(...)
        return False

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


# ------------------------------------------------------------------- rewrite
def apply(ctx) -> None:
    a = ctx.a
    found = training_tapes(a)
    by_hand = [t for t in found if not optimizer_applied(a, t[3])]
    plan = _plan_by_hand(ctx, by_hand) if by_hand else None
    if by_hand and plan is None:
        found = [t for t in found if t not in by_hand]  # warned: the file's other training is converted
    for w, item, name, calls in found:
        _wrap_tape(ctx, w, item, name, calls)
    per_optimizer: Dict[object, List[cst.Call]] = {}
    for p in apply_calls(a):
        if in_keras_train_step(a, p):
            continue
        per_optimizer.setdefault(optimizer_identity(a, receiver(p)), []).append(p)
    grad_calls = [c for *_, cs in found for c in cs]
    for calls in per_optimizer.values():
        _broadcast(ctx, calls[0], grad_calls)
        if len(calls) > 1:
            _broadcast_at_every_site(ctx, calls, grad_calls)
        _scale(ctx, receiver(calls[0]), calls)
    updates = plan[2] if plan is not None else []
    if plan is not None:
        _steps_by_hand(ctx, *plan)
    _divide_loops(ctx, {id(p) for cs in per_optimizer.values() for p in cs} | {id(u) for u in updates})
    step_loops.warn_single_steps(ctx, [p for calls in per_optimizer.values() for p in calls], "this step")


# ------------------------------------------------------ steps written by hand
def _plan_by_hand(ctx, tapes) -> Optional[tuple]:
    """(variables, training loop, updates, gradient calls) of the steps
    written by hand in these tapes, when tfdist can convert them: every
    variable differentiated is a tf.Variable that exists before the loop
    (to be broadcast there), and the updates sit in one training loop.
    Otherwise None after a warning naming the edit, when the file trains
    something else that is converted, or a refusal."""
    a = ctx.a
    grad_calls = [c for *_, cs in tapes for c in cs]
    updates = [u for *_, cs in tapes for u in manual_updates(a, cs)]
    why, where = None, None
    variables: List[str] = []
    for g in grad_calls:
        sources = find_arg(g, "sources", 1)
        names = _plain_variables(a, sources.value) if sources is not None else None
        if names is None:
            why, where = ("tfdist cannot see that the variables it differentiates are tf.Variables made before the "
                          "training loop, to broadcast them from rank 0 there"), g
            break
        variables += [n for n in names if n not in variables]
    loops = {id(dataflow.outermost_loop(a, u)): dataflow.outermost_loop(a, u) for u in updates}
    if why is None and (len(loops) != 1 or None in loops.values()):
        why, where = "its updates are not in one training loop, before which their initial values can be broadcast", updates[0]
    if why is None:
        return variables, next(iter(loops.values())), updates, grad_calls
    message = (f"this step updates variables by hand ({a.code(updates[0].func)}, no optimizer) and {why}: use an "
               "optimizer's apply_gradients, or broadcast the variables from rank 0 once before training, average "
               "the gradients and scale the rate by hand")
    if any(p != P.TAPE for p in ctx.patterns) or len(tapes) < len(training_tapes(a)):
        ctx.warn(where, data_division.RULE, message)
        return None
    raise ctx.unsupported(where, message)


def _steps_by_hand(ctx, variables: List[str], loop, updates: List[cst.Call], grad_calls: List[cst.Call]) -> None:
    """Variables updated by hand with the tape's gradients: the tape (wrapped
    above) averages the gradients; the variables, made before the training
    loop, are broadcast from rank 0 right before it; the rate each update
    multiplies the gradient by is scaled."""
    a = ctx.a
    stmt = a.statement_of(loop) or loop
    # tf.Variables by name in one list; a tf.Module's ``variables`` added whole
    single = [v for v in variables if not v.endswith(".variables")]
    whole = [f"list({v})" for v in variables if v.endswith(".variables")]
    listed = " + ".join(([f"[{', '.join(single)}]"] if single else []) + whole)
    ctx.plan.insert_before(stmt, ctx.stmts(ctx.backend.broadcast_now(listed),
                                           comment=ctx.say("{engine}: every rank starts from rank 0's variables.")))
    ctx.change(loop, "broadcast", f"{', '.join(variables)} broadcast from rank 0 before the training loop (updated by "
                                  f"hand, with no optimizer state)")
    gradients = _gradients_and_loop_targets(a, grad_calls)
    for u in updates:
        rate = _update_rate(a, u, gradients)
        if rate is None:
            ctx.warn(u, lr_scaling.RULE, f"cannot tell the learning rate of {a.code(u)}: multiply it by the number "
                                         "of processes by hand")
        else:
            lr_scaling.scale_value(ctx, rate, u)


def _plain_variables(a: A.Analysis, expr) -> Optional[List[str]]:
    """The tf.Variables a list of them (or a name bound once to such a list)
    holds, as code: names bound to tf.Variable(...), attributes a class of
    the user's sets to tf.Variable(...) (``model.w``), a tf.Module's
    ``variables``; None for anything else (a Keras model's variables, which
    may not exist before its first call)."""
    if isinstance(expr, cst.Attribute):
        if expr.attr.value in ("trainable_variables", "variables") and a.is_kind(expr.value, A.MODULE) \
                and not a.is_kind(expr.value, A.MODEL):
            return [f"{a.code(expr.value)}.variables"]
        classes = a.instance_classes(expr.value)
        values = [v for cd in classes for v in a.attribute_values(cd, expr.attr.value)]
        if classes and values and all(isinstance(v, cst.Call) and a.is_name(v, {apis.TF_VARIABLE}) for v in values):
            return [a.code(expr)]
        return None
    if isinstance(expr, cst.Name):
        bound = a.assigned_values(expr)
        if len(bound) == 1 and isinstance(bound[0][1], cst.Call) and a.is_name(bound[0][1], {apis.TF_VARIABLE}):
            return [expr.value]
        if len(bound) == 1 and isinstance(bound[0][1], (cst.List, cst.Tuple)):
            return _plain_variables(a, bound[0][1])
        return None
    if isinstance(expr, (cst.List, cst.Tuple)) and expr.elements:
        out = []
        for e in expr.elements:
            inner = _plain_variables(a, e.value) if isinstance(e.value, (cst.Name, cst.Attribute)) else None
            if inner is None:
                return None
            out += inner
        return out
    return None


def _update_rate(a: A.Analysis, update: cst.Call, gradients: Set[str]) -> Optional[cst.BaseExpression]:
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


def wrap_tape(ctx, w, item, name, calls) -> None:
    _wrap_tape(ctx, w, item, name, calls)


def _wrap_tape(ctx, w: cst.With, item: cst.WithItem, name: str, calls: List[cst.Call]) -> None:
    a = ctx.a
    block = a.parent(w)
    first = min(calls, key=lambda c: (a.line(c), a.col(c)))
    stmt = a.statement_of(first)
    anchor = None
    cur = stmt
    while cur is not None:
        par = a.parent(cur)
        if par is block or par is w.body:
            anchor = cur
            break
        cur = a.statement_of(par) if par is not None else None
    if anchor is None:
        ctx.warn(first, RULE, ctx.say("cannot place the {tape_wrapper} for {name}: wrap it by hand before {name}.gradient", name=name))
        return
    ctx.plan.insert_before(anchor, ctx.stmts(ctx.backend.wrap_tape(name),
                                             comment=ctx.say("{engine}: average gradients across ranks.")))
    ctx.change(item, RULE, ctx.say("GradientTape {name} wrapped in {tape_wrapper} before its gradient() call", name=name))


def _variables_identity(a: A.Analysis, call: cst.Call, grad_calls) -> Optional[tuple]:
    """What the variables an apply_gradients call updates are bound to: the
    models (by their construction) whose variables it names."""
    variables = applied_variables(a, call)
    if variables is None:
        variables = _sources_of(a, call, grad_calls)
    if variables is None:
        return None
    owners = []
    for node in walk(variables):
        if isinstance(node, cst.Attribute) and node.attr.value in ("trainable_variables", "trainable_weights",
                                                                   "variables", "weights"):
            models = sorted({id(t.call) for t in a.types(node.value) if t.kind == A.MODEL and t.call is not None})
            if not models:
                return None
            owners.append(tuple(models))
    return tuple(sorted(owners)) if owners else None


def _broadcast_at_every_site(ctx, calls: List[cst.Call], grad_calls) -> None:
    """One optimizer applying gradients at several places (a demo step, then
    the loop; a step redefined in a later notebook cell): when every site
    updates the same models' variables, the broadcast goes after each site,
    and ``iterations == 1`` makes it run exactly once, after whichever step
    runs first. Otherwise tfdist cannot tell which runs first: reported."""
    a = ctx.a
    identities = {_variables_identity(a, c, grad_calls) for c in calls}
    if None not in identities and len(identities) == 1:
        for c in calls[1:]:
            try:
                _broadcast(ctx, c, grad_calls)
            except Exception as e:  # Unsupported: this site cannot take the broadcast
                if not hasattr(e, "line"):
                    raise
                break
        else:
            return
    if _broadcast_after_the_last_of_a_step(ctx, calls, grad_calls):
        return
    lines = ", ".join(str(a.line(c)) for c in calls)
    ctx.warn(calls[1], RULE, f"the optimizer of {a.code(receiver(calls[0]))} applies gradients at lines {lines} "
                             "to different variables: only the variables of the first call are broadcast from "
                             "rank 0; broadcast the others after their first step by hand")


def _broadcast_after_the_last_of_a_step(ctx, calls: List[cst.Call], grad_calls) -> bool:
    """One optimizer applying gradients to different variables at several
    statements of one block, one after the other (a GAN's step: the
    discriminator's, then the generator's): each pass through the block
    applies each once, so after the last one of the first pass the
    optimizer has counted exactly len(calls) applies. The first call's
    variables were broadcast after it (its count is 1 there); the others'
    go after the last call, with the optimizer's state, when its count is
    len(calls). False (nothing done) for any other layout."""
    a = ctx.a
    stmts = [a.statement_of(c) for c in calls]
    block = a.parent(stmts[0]) if stmts[0] is not None else None
    if block is None or any(s is None or a.parent(s) is not block for s in stmts):
        return False
    body = list(block.body)
    positions = [body.index(s) for s in stmts]
    if positions != sorted(positions) or len(set(positions)) != len(positions):
        return False
    if any(isinstance(n, _EXITS_BETWEEN) for s in body[positions[0]:positions[-1] + 1] for n in walk(s)):
        return False  # a pass could stop between them (continue, break, return)
    later = []
    for c in calls[1:]:
        variables = _updated_variables(a, c, grad_calls)
        if variables is None:
            return False
        later += [v for v in _model_vars(a, variables) if v not in later]
    if not _statement_of_its_own(a, calls[-1]):
        return False
    opt, opt_vars = _optimizer_state(a, receiver(calls[0]))
    code = ctx.backend.broadcast_after_first_step(opt, later, opt_vars, applies=len(calls))
    if code is None:
        return True
    ctx.plan.insert_after(stmts[-1], ctx.stmts(code, comment=ctx.say(
        "{engine}: broadcast from rank 0 once, after the first step's last apply by {opt} created its slots for "
        "these variables.", opt=opt)))
    ctx.change(calls[-1], "broadcast", f"variables of the later applies and {opt}'s state broadcast from rank 0 "
                                       f"after its first step's {len(calls)} applies")
    return True


_EXITS_BETWEEN = (cst.Continue, cst.Break, cst.Return, cst.Raise)


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


def _sources_of(a: A.Analysis, apply_call: cst.Call, grad_calls) -> Optional[cst.BaseExpression]:
    for g in grad_calls:
        names = gradient_names(a, [g])
        if mentions(apply_call, names) or g in _calls_under(apply_call):
            src = find_arg(g, "sources", 1)
            if src is not None:
                return src.value
    return None


def _model_vars(a: A.Analysis, expr) -> List[str]:
    """Variables to broadcast: a model's ``.variables`` (non-trainable too)."""
    if isinstance(expr, cst.BinaryOperation) and isinstance(expr.operator, cst.Add):
        return _model_vars(a, expr.left) + _model_vars(a, expr.right)
    if isinstance(expr, cst.Attribute) and expr.attr.value in ("trainable_variables", "trainable_weights"):
        return [f"{a.code(expr.value)}.variables"]
    return [a.code(expr)]


def _updated_variables(a: A.Analysis, call: cst.Call, grad_calls):
    """The variables an optimizer step updates: named in the call, else the
    sources of the gradients it applies; None when neither is known."""
    variables = applied_variables(a, call)
    return variables if variables is not None else _sources_of(a, call, grad_calls)


def _statement_of_its_own(a: A.Analysis, call: cst.Call) -> bool:
    """The call is a statement alone (not returned): code can go after it."""
    stmt = a.statement_of(call)
    small = stmt.body[0] if isinstance(stmt, cst.SimpleStatementLine) and len(stmt.body) == 1 else None
    return small is not None and not isinstance(small, cst.Return)


def _optimizer_state(a: A.Analysis, opt_expr):
    """(the optimizer as code, its variables as code: a legacy Keras
    optimizer's are a method, the others' a property)."""
    opt = a.code(opt_expr)
    legacy = any(t.name in apis.KERAS_LEGACY_OPTIMIZERS for t in a.types(opt_expr))
    return opt, f"{opt}.variables()" if legacy else f"{opt}.variables"


def _broadcast(ctx, call: cst.Call, grad_calls) -> None:
    a = ctx.a
    variables = _updated_variables(a, call, grad_calls)
    if variables is None:
        raise ctx.unsupported(call, f"cannot tell which variables {a.code(call.func)} updates, so the initial state cannot be broadcast from rank 0")
    stmt = a.statement_of(call)
    if not _statement_of_its_own(a, call):
        raise ctx.unsupported(call, f"{a.code(call.func)}(...) is not a statement of its own: the broadcast after the first step has nowhere to go")
    opt, opt_vars = _optimizer_state(a, receiver(call))
    code = ctx.backend.broadcast_after_first_step(opt, _model_vars(a, variables), opt_vars)
    ctx.plan.insert_after(stmt, ctx.stmts(code, comment=ctx.say("{engine}: broadcast initial state from rank 0 once, after the first step created the optimizer's slots.")))
    ctx.change(call, "broadcast", f"variables and {opt}'s state broadcast from rank 0 after its first {method_name(call)}")
    varying = _bound_per_iteration(a, variables, call)
    if varying is not None and not _optimizer_per_pass(a, receiver(call), varying):
        ctx.warn(call, "broadcast", ctx.say(
            "the variable list {vars} is bound anew at every pass of the loop at line {line}: the broadcast after the "
            "first step sends only the first pass's, and the others keep each rank's own initial values; broadcast "
            "all of them from rank 0 once before training by hand (e.g. {bcast})", vars=a.code(variables),
            line=str(a.line(varying)), bcast=ctx.fill(ctx.backend.broadcast_now("model.variables"))))


def _optimizer_per_pass(a: A.Analysis, opt, loop) -> bool:
    """The optimizer is a target of ``loop``, written out with a different
    optimizer for each pass (``for layers, optimizer in ((lower, opt_a),
    (upper, opt_b))``): each pass's broadcast fires at its own optimizer's
    first step, with that pass's variables."""
    if not isinstance(opt, cst.Name) or not isinstance(loop, cst.For) \
            or not any(n is not None and n.value == opt.value for n in walk(loop.target) if isinstance(n, cst.Name)):
        return False
    bound = a.assigned_values(opt)
    if len(bound) != 1:
        return False
    values = a.tuple_element_values(bound[0][0])
    built = [frozenset(id(t.call) for t in a.types(v) if t.kind == A.KERAS_OPTIMIZER and t.call is not None)
             for v in values]
    # each pass's optimizer built by one construction of its own
    return len(values) > 1 and all(len(b) == 1 for b in built) and len(set(built)) == len(values)


def _bound_per_iteration(a: A.Analysis, variables, call: cst.Call):
    """The for-loop around ``call`` whose elements choose the variables
    ``variables`` reads (``for layers, opt in ((lower, o1), (upper, o2))``,
    ``variables = layers.trainable_variables``): a different set at every
    pass. None when they are the same at every pass (``params =
    model.trainable_variables`` rebound in the loop)."""
    loops = [l for l in a.ancestors(call) if isinstance(l, cst.For)]
    targets = {n.value: l for l in loops for n in walk(l.target) if isinstance(n, cst.Name)}
    for name in (n for n in walk(variables) if isinstance(n, cst.Name)):
        if isinstance(a.parent(name), cst.Attribute) and a.parent(name).attr is name:
            continue
        for where, value in a.assigned_values(name):
            if where is None:
                continue
            for loop in loops:
                if dataflow.is_inside(a, where, loop.target):
                    return loop
                if value is not None and dataflow.is_inside(a, where, loop.body):
                    chosen = next((targets[n.value] for n in walk(value) if isinstance(n, cst.Name) and n.value in targets), None)
                    if chosen is not None:
                        return chosen
    return None


def _scale(ctx, opt_expr, applies: Sequence[cst.Call] = ()) -> None:
    """Scale the rate of the optimizer applying the gradients: every
    construction of it that reaches the apply (followed through names and
    functions, as compile()'s optimizer is; a name rebound cell after cell
    reaches one), else the first of those its type names, in file order (a
    set's order would change from run to run)."""
    from .keras_fit import _constructions
    a = ctx.a
    built = [(c, t) for c, t in _constructions(a, opt_expr, 0) or []
             if t.kind == A.KERAS_OPTIMIZER and isinstance(c, cst.Call)]
    if not built:
        typed = sorted((t for t in a.types(opt_expr) if t.kind == A.KERAS_OPTIMIZER and t.call is not None),
                       key=lambda t: (a.line(t.call), a.col(t.call)))
        if len({id(t.call) for t in typed}) > 1:
            # several constructions, and tfdist cannot follow which reaches the apply: scaling one of
            # them would leave another unscaled, silently
            ctx.warn(opt_expr, lr_scaling.RULE, ctx.say(
                "{opt} may be any of the optimizers built at lines {lines}, and tfdist cannot follow which "
                "reaches this step: multiply the learning rate of each one that trains here by {size} by hand",
                opt=a.code(opt_expr), lines=", ".join(str(a.line(t.call)) for t in typed)))
            return
        built = [(t.call, t) for t in typed[:1]]
    for call, t in built:
        if lr_scaling.scale_optimizer_lr(ctx, call, t.name):
            warmup.warm_up_tape_optimizer(ctx, call)
        else:
            warmup.not_warmed_up(ctx, call)
    if built:
        return
    if not any(t.kind == A.KERAS_OPTIMIZER for t in a.types(opt_expr)) and not _scale_unseen(ctx, applies):
        ctx.warn(opt_expr, lr_scaling.RULE, f"where {a.code(opt_expr)} is created is unknown: multiply its learning rate by the number of processes by hand")


def _scale_unseen(ctx, applies: Sequence[cst.Call]) -> bool:
    """An optimizer built where tfdist cannot see (a parameter only another
    module's call binds): its rate scaled on the object itself, once, when
    the step first runs -- where that runs eagerly: at each apply_gradients
    of it outside a tf.function, or where a tf.function's optimizer
    parameter is handed to it (inside a graph the scaling would be an op run
    at every step). Not when an optimizer this file builds may be it (scaled
    where it is built), nor under a warmup (which ramps the rate it finds)."""
    from .keras_fit import _may_be_built_here
    a = ctx.a
    traced = dataflow.traced_functions(a, apis.TF_FUNCTION)
    if traced is None or ctx.backend.warmup_epochs:
        return False
    sites: List[cst.BaseExpression] = []
    for apply_call in applies:
        found = _eager_optimizer_sites(a, receiver(apply_call), traced)
        if found is None:
            return False
        sites.extend(s for s in found if all(s is not t for t in sites))
    if not sites or any(_may_be_built_here(a, s) for s in sites):
        return False
    for site in sites:
        template = lr_scaling.scale_at_run_time(ctx, site, warmup.keras_module(ctx), "when the step first runs")
        if template is None:
            return False  # --lr-scaling none
        ctx.plan.replace(site, lambda upd, template=template: ctx.expr(template, inner=ctx.module.code_for_node(upd)))
    return True


def _eager_optimizer_sites(a: A.Analysis, expr, traced, depth: int = 0) -> Optional[List[cst.BaseExpression]]:
    """Where the optimizer ``expr`` is, in code that runs eagerly: expr
    itself, or -- expr being a parameter of a traced function -- the
    arguments every call of this module hands to it. None when a call of
    that function is not found here by name (another module's, a
    strategy.run(...)), or the optimizer comes from elsewhere in the graph."""
    if isinstance(expr, cst.Name) and not a.assigned_values(expr):
        return None  # bound nowhere: the script fails as written (a snippet of a larger one)
    if dataflow.runs_eagerly(a, expr, traced):
        return [expr]
    fdef = next((f for f in a.ancestors(expr) if isinstance(f, cst.FunctionDef)), None)
    if depth > 4 or not isinstance(expr, cst.Name) or fdef is None:
        return None
    bound = a.assigned_values(expr)
    if len(bound) != 1 or not isinstance(bound[0][0], cst.Param) or bound[0][0] not in fdef.params.params:
        return None
    calls = a.argument_values(bound[0][0])
    named = sum(1 for n in walk(a.module) if isinstance(n, cst.Name) and n.value == fdef.name.value
                and not (isinstance(a.parent(n), cst.FunctionDef) and a.parent(n).name is n))
    if not calls or named != len(calls):
        return None  # handed on (strategy.run(step, ...)) or called in ways not followed here
    out: List[cst.BaseExpression] = []
    for _, value in calls:
        found = _eager_optimizer_sites(a, value, traced, depth + 1)
        if found is None:
            return None
        out.extend(found)
    return out


# ------------------------------------------------------------- data division
def _reachable(a: A.Analysis, node, found, seen=None) -> bool:
    """Does ``found(node)`` hold for node, or for a local function it calls
    (transitively)?"""
    return dataflow.reaches(a, node, found, seen)


def _trains(a: A.Analysis, node, applies: Set[int]) -> bool:
    """Does running node run an optimizer step (directly or via local functions)?"""
    from .common import calls_in
    return _reachable(a, node, lambda n: any(id(c) in applies for c in calls_in(n)))


def _loop_dataset(a: A.Analysis, it) -> Tuple[Optional[cst.BaseExpression], Optional[cst.Call]]:
    """The dataset a for-loop iterates (made here, or by a helper of another
    module of the project), and a ``.take(n)`` directly on it."""
    if isinstance(it, cst.Call) and isinstance(it.func, cst.Name) and it.func.value == "enumerate" and it.args:
        it = it.args[0].value
    take = None
    if isinstance(it, cst.Call) and method_name(it) == "take":
        take = it
    is_dataset = a.is_kind(it, A.DATASET) or bool(dataset_flow.dataset_sources(a, it)) \
        or dataset_flow.external_dataset(a, it)
    return (it if is_dataset else None), take


def _divide_loops(ctx, applies: Set[int]) -> None:
    a = ctx.a
    training_loops = [f for f in a.for_loops if _trains(a, f.body, applies)]
    dataset_loops = []
    for loop in training_loops:
        ds, take = _loop_dataset(a, loop.iter)
        if ds is None:
            continue
        dataset_loops.append(loop)
        if not data_division.shard_dataset(ctx, ds, "training data"):
            ctx.warn(loop.iter, data_division.RULE, ctx.say("cannot find where this dataset is built: shard it with .shard({size}, {rank})"))
        data_division.divide_steps_taken(ctx, ds)
        step_loops.divide_enumerated_cap(ctx, loop)
    # A loop inside a loop over a dataset is part of its step (the updates
    # of a step written by hand: for g, v in zip(grads, variables)).
    # So is a loop over a list written out (``for layers, optimizer in ((lower,
    # opt1), (upper, opt2)):``): it applies each of a fixed set, once a step.
    candidates = [l for l in training_loops + [w for w in a.while_loops if _trains(a, w.body, applies)]
                  if l not in dataset_loops and not _reaches(a, l.body, dataset_loops)
                  and not any(anc in dataset_loops for anc in a.ancestors(l)) and not over_a_display(l)]
    # Only the innermost loop is the step loop; one around it (directly or
    # through a function it calls) is an epoch loop and keeps its count.
    step_loops_found = [l for l in candidates if not any(o is not l and _reaches(a, l.body, [o]) for o in candidates)]
    for loop in step_loops_found:
        if iterator_classes.iterated_instance(a, loop):
            if iterator_classes.shard_iterated_class(ctx, loop, otherwise=lambda loop=loop: step_loops.share_stream(
                    ctx, loop, "training steps", _step_spots(a, loop, applies))):
                continue  # the class ends each epoch after the rank's share of its batches (or the loop takes its share)
        sliced = _slice_rows_read(ctx, loop, applies)
        found = _samplers_feeding(a, loop, applies)
        if sliced is None:  # rows not sliced by rank: random rows must differ per rank
            read = {n.value for spot in _step_spots(a, loop, applies) for n in walk(spot) if isinstance(n, cst.Name)}
            found += [samplers.Sampler(c, samplers.GLOBAL_STREAM)
                      for c in _random_index_draws(a, loop, read, apis.NUMPY_GLOBAL_RANDOM)]
            if data_division.global_seed_set_before(a, loop):
                for draw in _random_index_draws(a, loop, read, apis.TF_GLOBAL_RANDOM):
                    ctx.warn(draw, data_division.RULE, ctx.say(
                        "the rows of each step are drawn with {draw}(...) after the script seeds TensorFlow, so every "
                        "rank draws the same rows: seed it per rank right before this loop, e.g. "
                        "tf.random.set_seed(<seed> + {rank}), by hand", draw=a.code(draw.func)))
        if found:
            samplers.draw_per_rank(ctx, found)
        if step_loops.divide(ctx, loop, "training steps", sliced, _step_spots(a, loop, applies)) == step_loops.UNKNOWN:
            ctx.warn(loop, data_division.RULE, ctx.say("cannot see how many steps this training loop runs: make each rank "
                                                       "run 1/size of its steps (e.g. divide its step count by {size})"))
        _shard_iterators(ctx, loop)  # next(it) with it = iter(dataset), in a for or a while step loop


def over_a_display(loop) -> bool:
    """A ``for`` over a tuple or list written out in place: a fixed set of
    things (optimizers, models) handled in turn within one step."""
    return isinstance(loop, cst.For) and isinstance(loop.iter, (cst.Tuple, cst.List)) and bool(loop.iter.elements)


def _settings_written_out(a: A.Analysis, name: cst.Name) -> bool:
    """Every binding of name is a list or tuple of literal numbers or
    strings written out (``SCALES = [1.0, 0.5, 0.25]``): settings a step
    picks by its number, not rows of data to divide."""
    def literal(e) -> bool:
        if isinstance(e, cst.UnaryOperation) and isinstance(e.operator, cst.Minus):
            e = e.expression
        return isinstance(e, (cst.Integer, cst.Float, cst.SimpleString))
    bound = a.assigned_values(name)
    return bool(bound) and all(isinstance(v, (cst.List, cst.Tuple)) and v.elements and all(
        not isinstance(el, cst.StarredElement) and literal(el.value) for el in v.elements) for _o, v in bound)


def _rows_read(a: A.Analysis, loop, applies: Set[int]) -> Tuple[Dict[str, cst.Name], List[cst.CSTNode]]:
    """Arrays whose rows the training step reads, followed back through the
    loops around it to where they are bound (``x_train`` in ``xb =
    x_train[i * B:(i + 1) * B]`` when ``xb`` goes into the tape block or into
    a call that trains), and the nodes that read them. No arrays, and the
    names the step reads that tfdist cannot follow back, when it reads rows
    it can follow beside those (slicing only some would break the pairs)."""
    from .common import calls_in
    spots: List[cst.CSTNode] = [w.body for w, _, _ in tapes(a) if dataflow.is_inside(a, w, loop)]
    spots += [arg for c in calls_in(loop.body) if _trains(a, c, applies) for arg in c.args]
    outer = dataflow.outermost_loop(a, loop) or loop
    roots: Dict[str, cst.Name] = {}
    readers: List[cst.CSTNode] = []
    candidates: List[cst.Name] = []
    for spot in spots:
        for n in walk(spot):
            if isinstance(n, cst.Subscript):
                base = n.value
                while isinstance(base, cst.Subscript):
                    base = base.value
                if isinstance(base, cst.Name):
                    candidates.append(base)
            elif isinstance(n, cst.Name) and _rows_bound_in_loop(a, n, loop):
                candidates.append(n)
    # names bound in the loop from a computation on rows of an outer array
    # (xb = augment(x[i:i + B])): not followed, but they must be divided too
    # (the data entering the step: not what the step computes from it)
    missed: List[cst.Name] = [n for spot in spots for n in walk(spot) if isinstance(n, cst.Name)
                              and not any(dataflow.is_inside(a, o, sp) for o, _ in a.assigned_values(n) for sp in spots)
                              and not _rows_bound_in_loop(a, n, loop) and _computed_from_rows(a, n, loop, spots)]
    for name in candidates:
        if a.kinds(name) or any(isinstance(o, cst.Param) for o, _ in a.assigned_values(name)):
            continue  # a model, a dataset, ... or an argument of the step function itself
        found: Dict[str, cst.Name] = {}
        read_here: List[cst.CSTNode] = []
        if tf1_common._array_roots(a, name, outer, found, read_here, loop):
            kept = {k: v for k, v in found.items() if not a.kinds(v) and not _settings_written_out(a, v)}
            for k, v in kept.items():
                roots.setdefault(k, v)
            if found and all(_settings_written_out(a, v) for v in found.values()):
                read_here = []  # only settings written out: nothing read as data here
        elif isinstance(name, cst.Name) and _rows_bound_in_loop(a, name, loop):
            missed.append(name)
        readers += [r for r in read_here if r not in readers]
    # a value computed in the loop from rows of the arrays sliced anyway (a
    # generator's output for a batch of conditions: ``fake =
    # generator.predict([noise, y[i:i + B]])``) is made from each rank's rows
    missed = [n for n in missed if not (set() < _row_arrays(a, n, loop, spots) <= roots.keys())]
    if roots and missed:
        # the step reads rows of arrays tfdist can follow and rows it cannot:
        # slicing only the first would pair samples with other samples' labels
        return {}, list({n.value: n for n in missed}.values())
    return roots, readers


def _computed_from_rows(a: A.Analysis, name: cst.Name, loop, spots) -> bool:
    """``name`` is bound in the loop, before the step (``spots``), to a value
    computed from a slice of an array bound before the loop
    (``augment(x[i:i + B])``), directly or through other such names."""
    return bool(_row_arrays(a, name, loop, spots))


def _row_arrays(a: A.Analysis, name: cst.Name, loop, spots, depth: int = 0) -> Set[str]:
    """The arrays bound before the loop whose rows ``name`` (bound in the
    loop, before the step) is computed from, directly or through other
    names bound there."""
    out: Set[str] = set()
    if depth > 4:
        return out
    for origin, value in a.assigned_values(name):
        if value is None or not dataflow.is_inside(a, origin, loop) \
                or any(dataflow.is_inside(a, origin, spot) for spot in spots):
            continue
        for sub in walk(value):
            if isinstance(sub, cst.Name) and sub is not name:
                out |= _row_arrays(a, sub, loop, spots, depth + 1)
            base = sub.value if isinstance(sub, cst.Subscript) else None
            while isinstance(base, cst.Subscript):
                base = base.value
            if isinstance(base, cst.Name) and not a.kinds(base) and a.assigned_values(base) and not any(
                    dataflow.is_inside(a, o, loop) for o, _ in a.assigned_values(base)):
                out.add(base.value)
    return out


def _rows_bound_in_loop(a: A.Analysis, name: cst.Name, loop, depth: int = 0) -> bool:
    """``name`` is bound in the loop to rows of an array (``xb = x[i:i + B]``),
    directly or through conversions keeping them (``xb =
    tf.convert_to_tensor(xb)``), or as an element of a tuple of such rows."""
    if depth > 4:
        return False
    for origin, value in a.assigned_values(name):
        if not dataflow.is_inside(a, origin, loop):
            continue
        if value is None and isinstance(origin, cst.Name):
            iterated = tf1_common.loop_row_source(a, origin)
            if iterated is not None and dataset_flow.numpy_array(a, iterated):
                return True  # for x, y in zip(x_train, y_train): rows of arrays (not a dataset's batches)
            value = dataflow.element_value(a, origin)
            if value is None and tf1_common.batch_helper_arrays(a, dataflow.assigned_by(a, origin)):
                return True  # xb, yb = get_batch(x, y, step)
        if tf1_common.batch_helper_arrays(a, value):
            return True
        value = tf1_common.rows_under(a, value)
        if isinstance(value, cst.Subscript):
            return True
        if isinstance(value, cst.Name) and value is not name and _rows_bound_in_loop(a, value, loop, depth + 1):
            return True
    return False


def _step_spots(a: A.Analysis, loop, applies: Set[int]) -> List[cst.CSTNode]:
    """Where the step loop's data enters training: its tape blocks and the arguments of calls that train."""
    from .common import calls_in
    spots: List[cst.CSTNode] = [w.body for w, _, _ in tapes(a) if dataflow.is_inside(a, w, loop)]
    spots += [arg for c in calls_in(loop.body) if _trains(a, c, applies) for arg in c.args]
    return spots


def _from_dataset_iterator(a: A.Analysis, call: cst.Call) -> bool:
    """``next(it)`` with ``it = iter(dataset)``: divided by sharding the dataset."""
    if not (a.is_name(call, {"builtins.next"}) and call.args and isinstance(call.args[0].value, cst.Name)):
        return False
    for _, value in a.assigned_values(call.args[0].value):
        if isinstance(value, cst.Call) and a.is_name(value, {"builtins.iter"}) and value.args \
                and a.is_kind(value.args[0].value, A.DATASET):
            return True
        if value is not None and a.is_kind(value, A.DATASET):
            return True
    return False


def _samplers_feeding(a: A.Analysis, loop, applies: Set[int]) -> List[samplers.Sampler]:
    """Batches the step loop draws from a sampler (``next_batch``, a function
    of the user's, a generator) and hands to the training step."""
    read = {n.value for spot in _step_spots(a, loop, applies) for n in walk(spot) if isinstance(n, cst.Name)}
    out = []
    for stmt in walk(loop.body):
        if not (isinstance(stmt, cst.Assign) and isinstance(stmt.value, cst.Call) and len(stmt.targets) == 1):
            continue
        call = stmt.value
        targets = {n.value for n in walk(stmt.targets[0].target) if isinstance(n, cst.Name)}
        if not targets & read or _from_dataset_iterator(a, call) or _trains(a, call, applies):
            continue
        if dataflow.reaches(a, call, lambda n: any(isinstance(w, cst.With) and any(
                isinstance(i.item, cst.Call) and a.is_name(i.item, {apis.GRADIENT_TAPE}) for i in w.items)
                for w in walk(n))):
            continue
        found = samplers.classify(a, call, dataflow.outermost_loop(a, call) or loop)
        if found is not None:
            out.append(found)
    return out


def _random_index_draws(a: A.Analysis, loop, read: Set[str], functions) -> List[cst.Call]:
    """Draws from a global generator (``functions``: NumPy's, TensorFlow's) in the loop body that pick the
    rows of the step's batch (``idx = np.random.choice(n, bs)``; ``xb =
    x[idx]``), followed back from what the step reads: a script that seeds
    NumPy once would give every rank the same batches. Only draws used as
    an index: another draw (a rate, a choice between steps) must stay the
    same on every rank."""
    body = [s for s in walk(loop.body) if isinstance(s, (cst.Assign, cst.AugAssign, cst.AnnAssign))]
    indexes = [n for e in walk(loop.body) if isinstance(e, cst.SubscriptElement) for n in walk(e)] + [
        n for c in walk(loop.body) if isinstance(c, cst.Call) and a.names(c) & apis.GATHER_FUNCTIONS
        for arg in c.args[1:] for n in walk(arg)]
    index_names = {n.value for n in indexes if isinstance(n, cst.Name)}
    index_calls = {id(n) for n in indexes if isinstance(n, cst.Call)}
    return [c for names, value in _feeding(body, read) for c in walk(value)
            if isinstance(c, cst.Call) and a.names(c) & functions and (id(c) in index_calls or names & index_names)]


def _feeding(body, read: Set[str]) -> List[Tuple[Set[str], cst.BaseExpression]]:
    """(names bound, value) of the assignments of a loop body (``body``, in
    source order) whose values reach the names ``read``, directly or through
    later such assignments -- followed back from the last."""
    needed = set(read)
    out = []
    for stmt in reversed(body):
        target = stmt.targets[0].target if isinstance(stmt, cst.Assign) and len(stmt.targets) == 1 else \
            getattr(stmt, "target", None)
        if target is None or stmt.value is None:
            continue
        names = {n.value for n in walk(target) if isinstance(n, cst.Name)}
        if not names & needed:
            continue
        needed |= {n.value for n in walk(stmt.value) if isinstance(n, cst.Name)}
        out.append((names, stmt.value))
    return out


def _rows_drawn_at_random(a: A.Analysis, loop, read: Set[str]) -> bool:
    """Every row the step's data is computed from, of an array bound before
    the loop, is picked by a draw from NumPy's global generator
    (``x[np.random.randint(0, n, B)]``, ``x[idx]`` with ``idx =
    np.random.choice(...)``), whatever the loop computes from those rows
    (``fake = generator.predict(noise)``, ``np.concatenate([real, fake])``):
    rows drawn per rank need no slicing."""
    body = [s for s in walk(loop.body) if isinstance(s, (cst.Assign, cst.AugAssign, cst.AnnAssign))]
    bound_here = {n.value for s in body for t in (s.targets if isinstance(s, cst.Assign) else [s])
                  for n in walk(t.target) if isinstance(n, cst.Name)}

    def draws(node) -> bool:
        return any(isinstance(c, cst.Call) and a.names(c) & apis.NUMPY_GLOBAL_RANDOM for c in walk(node))

    drawn = {n.value for s in body if s.value is not None and draws(s.value)
             for t in (s.targets if isinstance(s, cst.Assign) else [s]) for n in walk(t.target) if isinstance(n, cst.Name)}
    rows = [sub for _names, value in _feeding(body, read) for sub in walk(value) if isinstance(sub, cst.Subscript)
            and isinstance(sub.value, cst.Name) and sub.value.value not in bound_here and not a.kinds(sub.value)]
    return bool(rows) and all(any(draws(e) or any(isinstance(n, cst.Name) and n.value in drawn for n in walk(e))
                                  for e in sub.slice) for sub in rows)


def _slice_rows_read(ctx, loop, applies: Set[int]) -> Optional[step_loops.Sliced]:
    a = ctx.a
    roots, readers = _rows_read(a, loop, applies)
    if not roots:
        read = {n.value for spot in _step_spots(a, loop, applies) for n in walk(spot) if isinstance(n, cst.Name)}
        if readers and _rows_drawn_at_random(a, loop, read):
            return None  # nothing to slice: each rank draws its own rows (the caller re-seeds the draws by rank)
        if readers:  # rows of arrays it can follow and of ones it cannot
            ctx.warn(loop, data_division.RULE, ctx.say(
                "the training step reads {names} (line {line}), computed from rows of an array in a way tfdist "
                "cannot follow, beside rows it can follow: slicing only some would pair samples with the labels of others; give each "
                "rank its own equal share of every one of them, e.g. x = x[{rank}::{size}][:len(x) // {size}], "
                "all after the last one is computed", names=", ".join(sorted({n.value for n in readers})),
                line=str(min(a.line(o) for o, _ in a.assigned_values(readers[0])))))
        return None
    sliced = tf1_common.slice_where_final(ctx, roots, readers or [loop], "read by the training loop")
    if sliced is None:
        ctx.warn(loop, data_division.RULE, ctx.say(
            "the training loop reads rows of {roots}, which tfdist cannot slice where they "
            "are final: give each rank its own equal share, e.g. x = x[{rank}::{size}]"
            "[:len(x) // {size}] for each of them, all after the last one is computed", roots=", ".join(sorted(roots))))
    return sliced


def _shard_iterators(ctx, loop) -> None:
    """``next(it)`` in a step loop, with ``it = iter(dataset)``: shard dataset."""
    from .common import calls_in
    a = ctx.a
    for c in calls_in(loop.body):
        if isinstance(c.func, cst.Name) and c.func.value == "next" and c.args and isinstance(c.args[0].value, cst.Name):
            for _, value in a.assigned_values(c.args[0].value):
                if isinstance(value, cst.Call) and isinstance(value.func, cst.Name) and value.func.value == "iter" \
                        and value.args and a.is_kind(value.args[0].value, A.DATASET):
                    data_division.shard_dataset(ctx, value.args[0].value, "training data")


def _reaches(a: A.Analysis, node, loops) -> bool:
    """Is one of loops inside node, or inside a local function node calls?"""
    return _reachable(a, node, lambda n: any(any(anc is n for anc in a.ancestors(l)) for l in loops))
