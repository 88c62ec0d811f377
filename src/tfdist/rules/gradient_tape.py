"""TF2 custom training loops with ``tf.GradientTape``.

Per Horovod's TF2 recipe: every tape whose gradients are applied becomes a
``DistributedGradientTape`` (right before its first ``gradient`` call); after
each optimizer's first ``apply_gradients`` the variables it updated and its
own slots are broadcast from rank 0 -- exactly once, also inside a
``@tf.function`` (see the backend); the learning rate is scaled and the
datasets that feed the training loop are sharded.
"""
from __future__ import annotations

from typing import Dict, List, Optional
import libcst as cst
from .. import apis
from ..engine import analysis as A
from ..engine import patterns as P
from ..engine import dataflow
from ..engine.scopes import walk
from ..actions.tape_loops import divide_loops, scale, wrap_one_tape
from ..facts.gradient_tapes import RULE, applied_variables, apply_calls, calls_under, detect, gradient_names, gradients_and_loop_targets, in_keras_train_step, manual_updates, one_variable, optimizer_applied, training_tapes, update_rate
from ..facts.syntax import find_arg, mentions, method_name, receiver
from ..actions import learning_rate
from ..actions import refusals
from ..actions import step_division
from ..actions import updates_by_hand
from ..facts import learning_rates
from ..facts import whole_data
from ..facts.tape_rows import runs_optimizer_step
from ..facts import shard_points
from ..engine.rule import Rule, register


PATTERN = P.TAPE


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


# ------------------------------------------------------------------- rewrite
def apply(ctx) -> None:
    a = ctx.a
    refusals.refuse_tf1_optimizer_tapes(ctx)
    found = training_tapes(a)
    by_hand = [t for t in found if not optimizer_applied(a, t[3])]
    plan = _plan_by_hand(ctx, by_hand) if by_hand else None
    if by_hand and plan is None:
        found = [t for t in found if t not in by_hand]  # warned: the file's other training is converted
    for w, item, name, calls in found:
        wrap_one_tape(ctx, w, item, name, calls)
    per_optimizer: Dict[object, List[cst.Call]] = {}
    for p in apply_calls(a):
        if in_keras_train_step(a, p):
            continue
        per_optimizer.setdefault(optimizer_identity(a, receiver(p)), []).append(p)
    grad_calls = [c for *_, cs in found for c in cs]
    updates = plan[2] if plan is not None else []
    stepped = frozenset({id(p) for cs in per_optimizer.values() for p in cs} | {id(u) for u in updates})
    whole = whole_data.whole_data_loops(a, stepped, frozenset(updates_by_hand.loops_over_gradients(
        a, [c for *_, cs in by_hand for c in cs])))
    in_whole = {i for i in stepped for loop in whole if runs_optimizer_step(a, loop.body, {i})}
    for calls in per_optimizer.values():
        _broadcast(ctx, calls[0], grad_calls)
        if len(calls) > 1:
            _broadcast_at_every_site(ctx, calls, grad_calls)
        if not all(id(p) in in_whole for p in calls):  # a step on the whole data: the batch is the original's
            scale(ctx, receiver(calls[0]), calls)
    if plan is not None:
        _steps_by_hand(ctx, *plan, scaled=not all(id(u) in in_whole for u in updates))
    for loop in whole:
        _whole_data_said(ctx, loop)
    divide_loops(ctx, set(stepped), whole=whole)
    step_division.warn_single_steps(ctx, [p for calls in per_optimizer.values() for p in calls], "this step")


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
        ctx.warn(where, shard_points.RULE, message)
        return None
    raise ctx.unsupported(where, message)


def _whole_data_said(ctx, loop) -> None:
    """A loop of steps each on the whole data (facts/whole_data.py): every rank runs every step on all
    of it and the gradients averaged are the single process's, at its rate; said once."""
    ctx.facts["full_batch"] = True  # for tfdist verify: every process runs every step
    ctx.warn(loop, whole_data.RULE, ctx.say(
        "every step of this loop trains on the whole data: each rank runs it on all of it and the gradients "
        "averaged are the single process's, so the steps and the learning rate stay as they are -- exact, but no "
        "faster, and only if every process has the same data (loaded, or drawn with a fixed seed). To divide the "
        "work, batch the data (a tf.data.Dataset) and loop over its batches"))


def _steps_by_hand(ctx, variables: List[str], loop, updates: List[cst.Call], grad_calls: List[cst.Call],
                   scaled: bool = True) -> None:
    """Variables updated by hand with the tape's gradients: the tape (wrapped
    above) averages the gradients; the variables, made before the training
    loop, are broadcast from rank 0 right before it; the rate each update
    multiplies the gradient by is scaled (``scaled``: not for steps on the
    whole data, whose batch is the original's)."""
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
    gradients = gradients_and_loop_targets(a, grad_calls)
    for u in updates if scaled else ():
        rate = update_rate(a, u, frozenset(gradients))
        if rate is None:
            ctx.warn(u, learning_rates.RULE, f"cannot tell the learning rate of {a.code(u)}: multiply it by the number "
                                         "of processes by hand")
        else:
            learning_rate.scale_value(ctx, rate, u)


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


def _sources_of(a: A.Analysis, apply_call: cst.Call, grad_calls) -> Optional[cst.BaseExpression]:
    for g in grad_calls:
        names = gradient_names(a, [g])
        if mentions(apply_call, names) or g in calls_under(apply_call):
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
    if one_variable(a, expr):  # broadcast_variables takes a list
        return [f"[{a.code(expr)}]"]
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


@register
class GradientTapeLoops(Rule):
    id = "gradient-tape"
    description = "GradientTape loops and custom train_step under Horovod: DistributedGradientTape, a scaled learning rate, the broadcast after the first step, the data or the steps divided."
    engines = ('horovod',)
    kinds = ('broadcast', 'data-division', 'gradient-tape', 'lr-scaling', 'lr-warmup')
    refuses = "an optimizer whose updated variables it cannot tell; a first optimizer step that is not a statement of its own"
    example = "gradient_tape/eager_loop"
    order = 20
    PATTERN = PATTERN

    def detect(self, a):
        return detect(a)

    def apply(self, ctx) -> None:
        apply(ctx)
