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
from ..facts import replica_state
from ..facts.syntax import find_arg, receiver
from . import replicas


def scope_trained_state(ctx, applies, grad_calls, what: str = "trained models, variables and optimizers", said=None) -> None:
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
    if said is None:
        replicas.in_replica_scope(ctx, stmts, what)
    else:
        replicas.in_replica_scope(ctx, stmts, what, said=said)


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
            for s in replica_state.construction_statements(a, node, {A.MODEL}):
                if s not in out:
                    out.append(s)
            if isinstance(node, cst.Name):
                # an instance of a class of this module that makes tf.Variables (a tf.Module)
                if any(_creates_variables(a, cd) for cd in a.instance_classes(node)):
                    for t in a.types(node):
                        s = a.statement_of(t.call) if t.call is not None else None
                        if s is not None and s not in out:
                            out.append(s)
                for origin, value in a.assigned_values(node):
                    # layers in ``for layers, opt in ((lower_layers, opt_a), ...)``: each pass's element
                    for value in [value] if value is not None else a.tuple_element_values(origin):
                        if value is not expr:
                            out += [s for s in _variable_statements(a, value, depth + 1) if s not in out]
    return out


def _creates_variables(a: A.Analysis, cd: cst.ClassDef) -> bool:
    """Does the class (or a base class of this module) create tf.Variables?"""
    return any(isinstance(n, cst.Call) and a.is_name(n, {apis.TF_VARIABLE})
               for klass in a.lineage(cd) for n in walk(klass))
