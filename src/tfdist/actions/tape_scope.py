"""The state a GradientTape loop trains, built in a strategy's scope: the
optimizers whose ``apply_gradients`` the steps call and the models /
``tf.Variable``s whose gradients the tapes take (followed through names,
tuples of (layers, optimizer) pairs, instances of classes that make
variables). Shared by the tape rules of the replicating and the
parameter-server strategies."""
from __future__ import annotations

from typing import List

import libcst as cst
from .. import apis
from ..engine import analysis as A
from ..engine.scopes import walk
from ..facts import model_builds, replica_state
from ..facts.syntax import calls_in, find_arg, receiver
from ..facts.kinds import GRADIENT_TAPE as RULE
from . import replicas


def scope_trained_state(ctx, applies, grad_calls, what: str = "trained models, variables and optimizers",
                        said: str = replicas.SCOPE_SAID) -> None:
    """Optimizers (their ``apply_gradients`` calls) and the variables their tapes' gradients train
    (``tape.gradient`` calls), built in the strategy's scope."""
    a = ctx.a
    stmts: List[cst.BaseStatement] = []
    for p in applies:
        for s in replica_state.construction_statements(a, receiver(p), {A.KERAS_OPTIMIZER}):
            if s not in stmts:
                stmts.append(s)
    for g in grad_calls:
        sources = find_arg(g, "sources", 1)
        if sources is None:
            continue
        for s in _variable_statements(a, sources.value, 0):
            if s not in stmts:
                stmts.append(s)
    replicas.in_replica_scope(ctx, stmts, what, said=said)


def _variable_statements(a: A.Analysis, expr, depth: int) -> List[cst.BaseStatement]:
    """Statements building the models / tf.Variables an expression of
    trained variables refers to (``model.trainable_variables``, ``[w, b]``,
    ``params``, ``m1.trainable_variables + m2.trainable_variables``)."""
    if depth > 6:
        return []
    out: List[cst.BaseStatement] = []
    for node in walk(expr):
        if isinstance(node, cst.Call) and a.is_name(node, apis.VARIABLE_CONSTRUCTORS):
            s = a.statement_of(node)
            if s is not None and s not in out:
                out.append(s)
        if isinstance(node, (cst.Name, cst.Attribute)):
            for s in replica_state.construction_statements(a, node, {A.MODEL}):
                if s not in out:
                    out.append(s)
            if isinstance(node, cst.Name):
                # a Keras layer trained by itself, or a model built by its first call: made, and first
                # called, in the scope
                out += [s for s in model_builds.layer_building(a, node) + model_builds.lazy_model_building(a, node)
                        if s not in out]
                # an instance of a class of this module that makes tf.Variables (a tf.Module)
                if any(_creates_variables(a, cd) for cd in a.instance_classes(node)):
                    for t in a.types(node):
                        s = a.statement_of(t.call) if t.call is not None else None
                        if s is not None and s not in out:
                            out.append(s)
                # a wrapper holding variable-making objects made for it (``Seq([NaiveDense(...), ...])``, a
                # plain class whose own __init__ makes none): built in the scope with them, and the objects
                # it is handed by name too
                for t in a.types(node):
                    if t.call is None or not t.call.args or not a.instance_classes(t.call):
                        continue  # the construction of an instance of a class of this module only
                    if any(_makes_variables_in(a, arg.value) for arg in t.call.args):
                        s = a.statement_of(t.call)
                        if s is not None and s not in out:
                            out.append(s)
                    for arg in t.call.args:
                        out += [s for s in _variable_statements(a, arg.value, depth + 1) if s not in out]
                for origin, value in a.assigned_values(node):
                    # layers in ``for layers, opt in ((lower_layers, opt_a), ...)``: each pass's element;
                    # a parameter: what the calls of its function pass (``train_step(image)``)
                    values = [value] if value is not None else [arg for _, arg in a.argument_values(origin)] \
                        if isinstance(origin, cst.Param) else a.tuple_element_values(origin)
                    for value in values:
                        if value is not expr:
                            out += [s for s in _variable_statements(a, value, depth + 1) if s not in out]
    return out


def _makes_variables_in(a: A.Analysis, expr) -> bool:
    """Does the expression make a tf.Variable, or an instance of a class of this module that makes some?"""
    return any(isinstance(n, cst.Call) and (a.is_name(n, apis.VARIABLE_CONSTRUCTORS)
                                            or any(_creates_variables(a, cd) for cd in a.instance_classes(n)))
               for n in walk(expr))


def _creates_variables(a: A.Analysis, cd: cst.ClassDef) -> bool:
    """Does the class (or a base class of this module) create tf.Variables?"""
    return any(isinstance(n, cst.Call) and a.is_name(n, apis.VARIABLE_CONSTRUCTORS)
               for klass in a.lineage(cd) for n in walk(klass))


def build_slots_before_traced_loops(ctx, applies, grad_calls, loops) -> None:
    """A training loop that runs inside a ``tf.function`` (the whole epoch
    traced) gives the optimizer no eager first step: on several local
    replicas Keras 3 would create its slots inside the traced loop and fail
    ("You must feed a value for placeholder ... replica_1"). The optimizer
    is built on the variables it trains right after both exist, in the
    scope (``optimizer.build(model.trainable_variables)``); where tfdist
    cannot name both there, warned with that edit."""
    a = ctx.a
    traced = [l for l in loops if _in_traced_function(a, l)]
    if not traced or not applies:
        return
    done = ctx.state("tape_scope.slots_built")
    for p in applies:
        opt = replica_state.construction_statements(a, receiver(p), {A.KERAS_OPTIMIZER})
        sources = [find_arg(g, "sources", 1) for g in grad_calls]
        models = [s for arg in sources if arg is not None
                  for s in replica_state.construction_statements(a, _owner(arg.value), {A.MODEL})]
        if len(opt) == 1 and models and a.parent(models[0]) is not a.parent(opt[0]):
            # the model made by a factory (``model = make_model(10)``): the statement binding it beside the optimizer
            binders = {id(b): b for arg in sources if arg is not None and isinstance(_owner(arg.value), cst.Name)
                       for o, v in a.assigned_values(_owner(arg.value)) if v is not None
                       for b in [a.statement_of(v)] if b is not None and a.parent(b) is a.parent(opt[0])}
            models = list(binders.values()) if len(binders) == 1 else models
        names = [_bound_name(s) for s in opt[:1] + models[:1]]
        legacy = any(".legacy." in n for s in opt for c in calls_in(s) for n in a.names(c))
        if len(opt) == 1 and len(models) >= 1 and all(names) and not legacy \
                and a.parent(opt[0]) is a.parent(models[0]) and len({id(s) for s in models}) == 1:
            body = list(a.parent(opt[0]).body)
            last = max(opt[0], models[0], key=body.index)
            if id(last) in done:
                continue
            done.add(id(last))
            build = f"{names[0]}.build({names[1]}.trainable_variables)"
            ctx.plan.insert_after(last, ctx.stmts(build))
            ctx.change(last, RULE, ctx.say(
                "{optimizer} built on {model}'s variables in the scope: the training loop at line {line} runs "
                "inside a tf.function, where Keras 3 could not create the optimizer's slots on several replicas",
                optimizer=names[0], model=names[1], line=str(a.line(traced[0]))))
        else:
            ctx.warn(p, RULE, ctx.say(
                "the training loop at line {line} runs inside a tf.function: on several local replicas build "
                "the optimizer's slots before it is traced -- optimizer.build(model.trainable_variables) inside "
                "{scope}, right after both are made", line=str(a.line(traced[0])),
                scope=ctx.fill(ctx.backend.replica_scope())))


def _in_traced_function(a: A.Analysis, loop) -> bool:
    fdef = a.enclosing_function(loop)
    return fdef is not None and any(a.is_name(d.decorator, {apis.TF_FUNCTION}) is not None
                                    or isinstance(d.decorator, cst.Call) and a.is_name(d.decorator, {apis.TF_FUNCTION})
                                    for d in fdef.decorators)


def _owner(expr):
    """``model`` of ``model.trainable_variables``."""
    return expr.value if isinstance(expr, cst.Attribute) else expr


def _bound_name(stmt) -> str:
    """The name a ``name = value`` statement binds, else ''."""
    small = stmt.body[0] if isinstance(stmt, cst.SimpleStatementLine) and len(stmt.body) == 1 else None
    if isinstance(small, cst.Assign) and len(small.targets) == 1 and isinstance(small.targets[0].target, cst.Name):
        return small.targets[0].target.value
    return ""
