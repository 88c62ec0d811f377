"""GradientTape loops for engines that replicate variables (tf.distribute):
models, optimizers and trained variables created in the replication scope,
the training step run on every replica (its results averaged), each
replica's loss its share of the global mean, the dataset distributed with
the user's batch kept per replica, and counted step loops divided.
"""
from __future__ import annotations

import re
from typing import List, Set

import libcst as cst

from .. import apis
from ..engine import analysis as A
from ..engine import dataflow
from ..engine.scopes import walk
from . import data_division, gradient_tape, replicas, step_loops
from .common import calls_in, find_arg, method_name, receiver, source

PATTERN = gradient_tape.PATTERN
RULE = "gradient-tape"
detect = gradient_tape.detect


def apply(ctx) -> None:
    a = ctx.a
    found = gradient_tape.training_tapes(a)
    applies = [p for p in gradient_tape.apply_calls(a) if not gradient_tape.in_keras_train_step(a, p)]
    grad_calls = [c for *_, cs in found for c in cs]
    _scope_state(ctx, applies, grad_calls)
    for p in applies:
        gradient_tape._scale(ctx, receiver(p))
    for w, _item, _name, calls in found:
        for call in calls:
            _loss_share(ctx, w, call)
    _run_steps(ctx, {id(p) for p in applies})


# ------------------------------------------------------------ replica scope
def _scope_state(ctx, applies, grad_calls) -> None:
    """Optimizers and the variables they train, built in the scope."""
    a = ctx.a
    stmts: List[cst.BaseStatement] = []
    for p in applies:
        for s in replicas.construction_statements(a, receiver(p), {A.KERAS_OPTIMIZER}):
            if s not in stmts:
                stmts.append(s)
    for g in grad_calls:
        sources = find_arg(g, "sources", 1)
        if sources is None:
            continue
        for s in _variable_statements(a, sources.value, 0):
            if s not in stmts:
                stmts.append(s)
    replicas.in_replica_scope(ctx, stmts, "trained models, variables and optimizers")


def _variable_statements(a: A.Analysis, expr, depth: int) -> List[cst.BaseStatement]:
    """Statements building the models / tf.Variables an expression of
    trained variables refers to (``model.trainable_variables``, ``[w, b]``,
    ``params``, ``m1.trainable_variables + m2.trainable_variables``)."""
    if depth > 6:
        return []
    out: List[cst.BaseStatement] = []
    for node in walk(expr):
        if isinstance(node, cst.Call) and a.is_name(node, {apis.TF_VARIABLE}):
            s = a.statement_of(node)
            if s is not None and s not in out:
                out.append(s)
        if isinstance(node, (cst.Name, cst.Attribute)):
            for s in replicas.construction_statements(a, node, {A.MODEL}):
                if s not in out:
                    out.append(s)
            if isinstance(node, cst.Name):
                # an instance of a class of this module that makes tf.Variables (a tf.Module)
                if any(_creates_variables(a, cd) for cd in a.instance_classes(node)):
                    for t in a.types(node):
                        s = a.statement_of(t.call) if t.call is not None else None
                        if s is not None and s not in out:
                            out.append(s)
                for _, value in a.assigned_values(node):
                    if value is not None and value is not expr:
                        out += [s for s in _variable_statements(a, value, depth + 1) if s not in out]
    return out


def _creates_variables(a: A.Analysis, cd: cst.ClassDef) -> bool:
    """Does the class (or a base class of this module) create tf.Variables?"""
    return any(isinstance(n, cst.Call) and a.is_name(n, {apis.TF_VARIABLE})
               for klass in a._lineage(cd) for n in walk(klass))


# ------------------------------------------------------------ loss share
def _loss_share(ctx, w: cst.With, grad_call: cst.Call) -> None:
    """``tape.gradient(loss, ...)`` differentiates this replica's share of
    the global mean loss, computed while the tape still records."""
    a = ctx.a
    target = find_arg(grad_call, "target", 0)
    if target is None:
        return
    base = target.value.value if isinstance(target.value, cst.Name) else "loss"
    name = _free_local_name(ctx, f"scaled_{base}")
    stmt = a.statement_of(grad_call)
    inside = dataflow.is_inside(a, stmt, w.body)
    kind = _loss_kind(a, target.value)
    if kind == "mixed":
        ctx.warn(target.value, RULE, ctx.say(
            "{target} adds a Keras loss object's value (already divided by {size} under {engine} with Keras 3) to "
            "other terms: divide only the other terms by {size} before tape.gradient", target=a.code(target.value)))
        return
    if kind == "keras" and isinstance(target.value, cst.Name):
        # Keras 3 divides a Loss object's mean by the number of replicas when
        # a strategy runs it: the gradient is right as it is; the name gets
        # the mean back for what the step prints and returns.
        code = (f"{name} = {base}\n"
                f"{base} = " + ctx.fill(ctx.backend.per_replica_batch(name)))
        comment = ctx.say("{engine}: Keras 3 divided this loss by the number of replicas, as the optimizer (which sums "
                          "their gradients) needs; {base} is the mean again for what the step reports.", base=base)
        message = ctx.say("gradient of {target} as Keras 3 divides it by {size} under {engine}; the step reports the mean",
                          target=base)
    else:
        code = f"{name} = " + ctx.fill(ctx.backend.gradient_share(source(ctx.module, target.value)))
        comment = ctx.say("{engine}: the optimizer sums the replicas' gradients: "
                          "differentiate this replica's share of the mean loss.")
        message = ctx.say("gradient of {target} / {size} (the optimizer sums the replicas' gradients)",
                          target=a.code(target.value))
    new = ctx.stmts(code, comment=comment)
    if inside:
        ctx.plan.insert_before(stmt, new)
    else:
        last = w.body.body[-1]
        ctx.plan.insert_after(last, new)
    ctx.plan.replace(target.value, lambda old, name=name: cst.Name(name))
    ctx.change(grad_call, RULE, message)


KERAS_LOSS_MODULES = ("tensorflow.keras.losses.", "keras.losses.", "tf_keras.losses.")
KERAS_MEAN_REDUCTIONS = {"auto", "sum_over_batch_size", "mean", "mean_with_sample_weight"}


def _loss_kind(a: A.Analysis, expr, depth: int = 0) -> str:
    """'keras' when the loss is made of values of Keras Loss objects with a
    mean reduction (Keras 3 divides each by the number of replicas under a
    strategy), summed or scaled by constants; 'plain' when none is (a mean
    the user computed); 'mixed' when both kinds are added."""
    if depth > 6:
        return "plain"
    if isinstance(expr, cst.Call):
        return "keras" if _is_keras_loss_object(a, expr.func) else "plain"
    if isinstance(expr, cst.Name):
        values = [v for _, v in a.assigned_values(expr) if v is not None]
        kinds = {_loss_kind(a, v, depth + 1) for v in values} or {"plain"}
        return kinds.pop() if len(kinds) == 1 else "mixed"
    if isinstance(expr, cst.BinaryOperation):
        if isinstance(expr.operator, (cst.Multiply, cst.Divide)):
            for side, other in ((expr.left, expr.right), (expr.right, expr.left)):
                if isinstance(other, (cst.Integer, cst.Float)):
                    return _loss_kind(a, side, depth + 1)
            return "plain"
        if isinstance(expr.operator, (cst.Add, cst.Subtract)):
            kinds = {_loss_kind(a, expr.left, depth + 1), _loss_kind(a, expr.right, depth + 1)}
            return kinds.pop() if len(kinds) == 1 else "mixed"
    return "plain"


def _is_keras_loss_object(a: A.Analysis, func) -> bool:
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
    if not constructions:
        return False
    for c in constructions:
        if not isinstance(c, cst.Call):
            return False
        names = [n for n in a.names(c) if n.startswith(KERAS_LOSS_MODULES)]
        if not names or not names[0].rsplit(".", 1)[1][:1].isupper():
            return False  # a loss function (no reduction) or not a Keras loss
        reduction = find_arg(c, "reduction", None)
        if reduction is not None:
            value = reduction.value
            text = value.evaluated_value if isinstance(value, cst.SimpleString) else None
            if text is None and isinstance(value, cst.Attribute):
                text = value.attr.value.lower()
            if text is None or text.lower() not in KERAS_MEAN_REDUCTIONS:
                return False
    return True


def _free_local_name(ctx, preferred: str) -> str:
    used = ctx.state(__name__ + ".names")
    text = ctx.a.text
    name = preferred
    while name in used or re.search(r"\b" + re.escape(name) + r"\b", text):
        name += "_"
    used.add(name)
    return name


# ------------------------------------------------------------ steps
def _run_steps(ctx, applies: Set[int]) -> None:
    a = ctx.a
    trains = lambda node: gradient_tape._trains(a, node, applies)  # noqa: E731
    loops = [l for l in list(a.for_loops) + list(a.while_loops) if trains(l.body)]
    innermost = [l for l in loops if not any(o is not l and dataflow.is_inside(a, o, l.body) for o in loops)]
    if not innermost:
        ctx.warn(None, RULE, ctx.say("no training loop found around the steps: run each step with {run}",
                                     run=ctx.fill(ctx.backend.run_on_replicas("step", "args"))))
        return
    steps = []
    for loop in innermost:
        calls = [c for c in calls_in(loop.body) if trains(c) and dataflow.callees(a, c)
                 and not any(isinstance(p, (cst.FunctionDef, cst.Lambda)) for p in _between(a, c, loop))]
        if not calls or _batch_used_outside(ctx.a, loop, calls):
            # The step is written in the loop, or the loop works on the
            # (distributed) batch around the step calls: that code runs on
            # every replica too, as one step function.
            _step_from_inline_code(ctx, loop, trains)
            ctx.state(__name__ + ".extracted").add(loop)
            _distribute_loop_data(ctx, loop)
            continue
        for c in calls:
            steps += [f for f in dataflow.callees(a, c) if f not in steps]
        _distribute_loop_data(ctx, loop)
    extracted = ctx.state(__name__ + ".extracted")
    for call in a.calls:
        fdefs = dataflow.callees(a, call)
        if fdefs and any(f in steps for f in fdefs) and not any(dataflow.is_inside(a, call, f) for f in steps) \
                and not any(dataflow.is_inside(a, call, loop.body) for loop in extracted):
            _run_on_replicas(ctx, call)


def _step_from_inline_code(ctx, loop, trains) -> None:
    """The statements of a loop body that make one training step (from the
    first tape to the last optimizer step) become a step function defined
    in their place, run on every replica: its arguments are what the loop
    bound for this step, its results what is read after it."""
    a = ctx.a
    body = list(loop.body.body)
    tape_withs = {id(w) for w, *_ in gradient_tape.training_tapes(a)}
    batch = _batch_names(loop)
    training = [i for i, stmt in enumerate(body) if trains(stmt) or any(id(n) in tape_withs for n in walk(stmt))]
    # From the first statement working on the batch to the last training one.
    marks = training + [i for i, stmt in enumerate(body) if training and i < max(training)
                        and any(isinstance(n, cst.Name) and n.value in batch for n in walk(stmt))]
    refusal = ctx.say("the training step written inline in this loop cannot be moved into a step function "
                      "{engine} runs on every replica ({why}); move the tape, the gradient and apply_gradients "
                      "into a function called from the loop{alternative}", why="{why}")
    if not marks:
        raise ctx.unsupported(loop, refusal.replace("{why}", "the step was not found in the loop body"))
    first, last = min(marks), max(marks)
    span = body[first:last + 1]
    bound_before = set(_target_names(loop.target) if isinstance(loop, cst.For) else ())
    for stmt in body[:first]:
        bound_before |= _assigned(stmt)
    assigned = set()
    for stmt in span:
        assigned |= _assigned(stmt)
    read_in_span = []
    for stmt in span:
        for n in walk(stmt):
            if isinstance(n, cst.Name) and n.value not in read_in_span:
                read_in_span.append(n.value)
    for stmt in span:
        for n in walk(stmt):
            if isinstance(n, (cst.AugAssign,)) and isinstance(n.target, cst.Name) and n.target.value not in _assigned_plain(span):
                raise ctx.unsupported(n, refusal.replace("{why}", f"it updates {n.target.value}, bound outside the step"))
            if isinstance(n, (cst.Return, cst.Break, cst.Continue, cst.Yield, cst.Global, cst.Nonlocal)):
                raise ctx.unsupported(n, refusal.replace("{why}", "it leaves the loop body or yields"))
    params = [n for n in read_in_span if n in bound_before and n not in assigned]
    scope = a.enclosing_function(loop) or a.module
    # Names the rest of the same scope reads (not other functions' own names).
    outside = set()
    span_ids = {id(n) for stmt in span for n in walk(stmt)}
    nested = {id(n) for d in walk(scope) if d is not scope and isinstance(d, (cst.FunctionDef, cst.ClassDef, cst.Lambda))
              for n in walk(d.body)}
    for n in walk(scope):
        if isinstance(n, cst.Name) and id(n) not in span_ids and id(n) not in nested:
            outside.add(n.value)
    results = [n for n in sorted(assigned) if n in outside]
    name = _free_local_name(ctx, "train_step")
    run = ctx.fill(ctx.backend.run_on_replicas(name, ", ".join(params)))
    call_text = (", ".join(results) + " = " if results else "") + run
    define = ctx.stmts(f"def {name}({', '.join(params)}):\n    pass",
                       comment=ctx.say("{engine}: one training step, run on every replica."))[0]
    call = ctx.stmts(call_text)[0]
    returns = ctx.stmts("return " + ", ".join(results))[0] if results else None

    def build(inner, leading, define=define, call=call, returns=returns):
        statements = inner + ([returns] if returns is not None else [])
        return [define.with_changes(body=cst.IndentedBlock(body=statements),
                                    leading_lines=[*leading, *define.leading_lines]), call]

    ctx.plan.regroup(span, build)
    ctx.change(span[0], RULE, ctx.say("the inline training step (lines {start}-{end}) made a function {name}({params}) "
                                      "run on every replica, its results averaged",
                                      start=str(a.line(span[0])), end=str(a.end_line(span[-1])), name=name,
                                      params=", ".join(params)), through=span[-1])


def _batch_used_outside(a: A.Analysis, loop, calls) -> bool:
    """Does the loop body use what the loop binds (the batch) other than as
    arguments of its step calls (``noise = tf.random.normal([real.shape[0], 6])``)?"""
    batch = _batch_names(loop)
    if not batch:
        return False
    in_calls = {id(n) for c in calls for arg in c.args for n in walk(arg)}
    return any(isinstance(n, cst.Name) and n.value in batch and id(n) not in in_calls for n in walk(loop.body))


def _batch_names(loop) -> Set[str]:
    """The names a for loop binds to the elements of what it iterates
    (``x, y`` of ``for step, (x, y) in enumerate(ds)``, not the counter)."""
    if not isinstance(loop, cst.For):
        return set()
    target = loop.target
    it = loop.iter
    if isinstance(it, cst.Call) and isinstance(it.func, cst.Name) and it.func.value == "enumerate" \
            and isinstance(target, (cst.Tuple, cst.List)) and len(target.elements) == 2:
        target = target.elements[1].value
    return set(_target_names(target))


def _target_names(target) -> List[str]:
    return [n.value for n in walk(target) if isinstance(n, cst.Name)]


def _assigned_plain(stmts) -> Set[str]:
    out: Set[str] = set()
    for stmt in stmts:
        for n in walk(stmt):
            if isinstance(n, cst.AssignTarget):
                out |= set(_target_names(n.target))
    return out


def _assigned(stmt) -> Set[str]:
    """Names a statement binds (assignments, with-as, for targets)."""
    out: Set[str] = set()
    for n in walk(stmt):
        if isinstance(n, cst.AssignTarget):
            out |= set(_target_names(n.target))
        elif isinstance(n, (cst.AugAssign, cst.AnnAssign)):
            out |= set(_target_names(n.target))
        elif isinstance(n, cst.AsName):
            out |= set(_target_names(n.name))
        elif isinstance(n, cst.For):
            out |= set(_target_names(n.target))
    return out


def _between(a: A.Analysis, node, outer):
    for p in a.ancestors(node):
        if p is outer:
            return
        yield p


def _run_on_replicas(ctx, call: cst.Call) -> None:
    a = ctx.a
    if any(arg.star for arg in call.args):
        args = ", ".join(source(ctx.module, arg.value, False) if not arg.star else arg.star + source(ctx.module, arg.value, False)
                         for arg in call.args)
    else:
        args = ", ".join((f"{arg.keyword.value}=" if arg.keyword else "") + source(ctx.module, arg.value, False)
                         for arg in call.args)
    new = ctx.expr(ctx.backend.run_on_replicas(source(ctx.module, call.func, False), args))
    ctx.plan.replace(call, lambda old: new)
    ctx.change(call, RULE, ctx.say("{step}(...) run on every replica, its results averaged", step=a.code(call.func)))


def _distribute_loop_data(ctx, loop) -> None:
    a = ctx.a
    if isinstance(loop, cst.For):
        ds, take = gradient_tape._loop_dataset(a, loop.iter)
        if ds is not None:
            replicas.dataset_batches_per_replica(ctx, ds, "training data")
            replicas.split_by_engine(ctx, ds, "training data")
            target = take if take is not None else ds
            _distribute(ctx, target)
            ctx.change(target, data_division.RULE, ctx.say("training data distributed: each replica reads its own part of every global batch"))
            if take is not None and take.args:
                data_division.divide(ctx, take.args[0].value, "steps taken from the dataset")
            return
    iterators = _iterators_read(a, loop)
    if iterators:
        for it_call, ds in iterators:
            replicas.dataset_batches_per_replica(ctx, ds, "training data")
            replicas.split_by_engine(ctx, ds, "training data")
            _distribute(ctx, ds)
            ctx.change(it_call, data_division.RULE, ctx.say("training data distributed: each replica reads its own part of every global batch"))
        if step_loops.divide(ctx, loop, "training steps") == step_loops.UNKNOWN:
            ctx.warn(loop, data_division.RULE, ctx.say("cannot see how many steps this loop runs: each global batch covers {size} batches of the original, so run 1/{size} of the steps"))
        return
    raise ctx.unsupported(loop, ctx.say(
        "this training loop does not read a tf.data dataset: {engine} can divide the work only of a dataset it "
        "distributes; build a tf.data.Dataset of the samples{alternative}"))


def _distribute(ctx, dataset) -> None:
    """The strategy's distributed version of a dataset expression (built
    from its edited form: the batch kept per replica, the split policy)."""
    template = ctx.backend.distribute_dataset("{inner}")
    ctx.plan.replace(dataset, lambda upd: ctx.expr(template, inner=ctx.module.code_for_node(upd)))


def _iterators_read(a: A.Analysis, loop):
    """(iter(...) call, dataset) of ``next(it)`` reads in the loop, with it = iter(dataset)."""
    out = []
    for c in calls_in(loop.body):
        if not (isinstance(c.func, cst.Name) and c.func.value == "next" and c.args and isinstance(c.args[0].value, cst.Name)):
            continue
        for _, value in a.assigned_values(c.args[0].value):
            if isinstance(value, cst.Call) and isinstance(value.func, cst.Name) and value.func.value == "iter" \
                    and value.args and a.is_kind(value.args[0].value, A.DATASET):
                if all(value is not v for v, _ in out):
                    out.append((value, value.args[0].value))
    return out
