"""Running a statement on one process only: the rank guard around it.

Files and console output on rank 0 only, for every pattern.

Model saves, checkpoint saves, TF1 ``Saver.save`` and ``print`` statements go
under ``if hvd.rank() == 0:``; summary writers are no-op writers on other
ranks. Only statements that cannot run a collective operation are guarded
(a guarded collective deadlocks): a print whose arguments call anything
but pure built-ins, for instance, is left alone -- unless that call is a
Keras model's fit / evaluate / predict, which then runs on every rank first,
bound to a new name, and the print of that name on rank 0 only.

Every other file a training run writes is written by rank 0 only too: the
module functions of ``apis.FILE_WRITE_FUNCTIONS`` (NumPy, pickle, JSON,
pyplot savefig/show, tf.io.write_file, OpenCV, imageio...), the writing
methods of objects whose kind is known from what built them
(``apis.WRITER_OBJECT_METHODS``: a PIL image's ``save``, a Figure's
``savefig``, a DataFrame's ``to_csv``), and ``with open(path, "w")``
statements, guarded whole when their body is collective-free and sets no
name used after it. A ``save`` on an object of unknown type is never
guarded. A write tfdist cannot guard safely (inside a statement that also
trains, an ``open`` for writing kept in a variable) gets a warning with
the edit to make by hand.
"""
from __future__ import annotations

import libcst as cst
from .. import apis
from ..engine.scopes import walk
from ..facts.collectives import call_collective_free
from ..facts.syntax import calls_in, method_name, receiver, source
from ..facts.writes import RULE, is_model_value


def guard_call(ctx, call: cst.Call, what: str) -> None:
    """Run a call on the chief only: its statement under ``if <chief>:``
    when the call is all it does, ``call if <chief> else None`` when it is
    bound or sits in a one-line block; else a warning naming the edit. The
    caller has checked that the call runs no collective operation."""
    a = ctx.a
    stmt = a.statement_of(call)
    small = stmt.body[0] if isinstance(stmt, cst.SimpleStatementLine) and len(stmt.body) == 1 else None
    chief = ctx.backend.is_chief()
    if isinstance(small, cst.Expr) and small.value is call:
        if ctx.plan.guard(stmt, ctx.expr(chief)):
            ctx.change(call, RULE, f"{what} on rank 0 only")
    elif isinstance(small, (cst.Assign, cst.AnnAssign)) and small.value is call:
        new = ctx.expr(f"{source(a.module, call)} if {chief} else None")
        ctx.plan.replace(call, lambda old: new)
        ctx.change(call, RULE, f"{what} on rank 0 only (None elsewhere)")
    elif isinstance(small, cst.Expr) and all(
            call_collective_free(a, c, set(), ctx.backend.inference_runs_collectives) for c in calls_in(small.value)):
        # the output inside an expression statement that does nothing else
        # (``print(model.summary())``, ``print(...),``): the statement is guarded
        if ctx.plan.guard(stmt, ctx.expr(chief)) or stmt in ctx.state("rank0_io.whole"):
            ctx.state("rank0_io.whole").add(stmt)
            ctx.change(call, RULE, f"{what} on rank 0 only")
    elif isinstance(a.parent(call), cst.Expr) and isinstance(a.parent(a.parent(call)), cst.SimpleStatementSuite) \
            or isinstance(a.parent(call), cst.Lambda) and a.parent(call).body is call:
        # ``if cond: print(...)`` on one line, or a lambda's body
        # (``LambdaCallback(on_epoch_end=lambda e, logs: print(e))``): no room
        # for an if block, so the call itself becomes conditional
        new = ctx.expr(f"{source(a.module, call)} if {chief} else None")
        ctx.plan.replace(call, lambda old: new)
        ctx.change(call, RULE, f"{what} on rank 0 only")
    else:
        ctx.warn(call, RULE, ctx.say("{what}: run it on rank 0 only ({chief}) by hand", what=what))


def hoist_and_guard(ctx, call: cst.Call, what: str) -> bool:
    """Console output whose arguments hold one call that may run a collective
    operation, a Keras model's fit / evaluate / predict (``print("test",
    model.evaluate(x, y))`` under tf.distribute, ``print(model.fit(...).history
    ["loss"])``): that call runs on every rank
    first, bound to a new name, and the output, now collective-free, on the
    chief only. Only when the statement is the output alone, no other call
    in it may run a collective, and every call evaluated before that one is
    a pure built-in (moving it first changes no order that matters).
    False when the shape does not allow it (the statement is left alone)."""
    a = ctx.a
    stmt = a.statement_of(call)
    if not (isinstance(stmt, cst.SimpleStatementLine) and len(stmt.body) == 1
            and isinstance(stmt.body[0], cst.Expr) and stmt.body[0].value is call):
        return False
    if any(isinstance(n, (cst.NamedExpr, cst.Lambda, cst.Yield, cst.Await)) for n in walk(call)):
        return False
    inference = ctx.backend.inference_runs_collectives
    calls = calls_in(call)[1:]  # the output's arguments, in source order
    blockers = [c for c in calls if not call_collective_free(a, c, set(), inference)]
    outer = [c for c in blockers if not any(b is not c and _inside(a, c, b) for b in blockers)]
    if len(outer) != 1 or not _runs_a_model(a, outer[0]):
        return False  # an output calling what tfdist cannot tell from a collective is left as it is
    (hoisted,) = outer
    for c in calls:
        if c is hoisted or _inside(a, c, hoisted) or _inside(a, hoisted, c):
            continue  # moved with it / called on its result after it, as before
        if calls.index(c) < calls.index(hoisted) and not _pure(c):
            return False  # runs before it now; would run after it
    if stmt in ctx.plan.guards:
        return False
    name = _unused_name(ctx, f"{_method_or_name(hoisted) or 'output'}_result")
    chief = ctx.expr(ctx.backend.is_chief())
    func = hoisted.func

    def build(updated, leading, name=name, func=func, chief=chief):
        line = updated[0]
        finder = _Finder(func)
        line.visit(finder)
        if len(finder.found) != 1:
            return updated  # another edit rewrote the call: leave the statement as it is
        target = finder.found[0]
        printed = line.deep_replace(target, cst.Name(name)).with_changes(leading_lines=())
        bind = cst.SimpleStatementLine(body=[cst.Assign(targets=[cst.AssignTarget(cst.Name(name))], value=target)],
                                       leading_lines=leading)
        return [bind, cst.If(test=chief, body=cst.IndentedBlock(body=[printed]))]
    if not ctx.plan.regroup([stmt], build):
        return False
    ctx.change(call, RULE, f"{what} on rank 0 only; {a.code(hoisted.func)}() first runs on every rank, "
                           f"its result bound to {name}")
    return True


class _Finder(cst.CSTVisitor):
    """The calls of a statement whose function reads as ``func`` does."""

    def __init__(self, func):
        self.func = func
        self.found = []

    def visit_Call(self, node: cst.Call) -> None:
        if node.func.deep_equals(self.func):
            self.found.append(node)


def _runs_a_model(a, c: cst.Call) -> bool:
    """A Keras model's fit / evaluate / predict: what distribution itself makes a collective."""
    return method_name(c) in apis.KERAS_FIT_METHODS | apis.KERAS_VERBOSE_METHODS and is_model_value(a, receiver(c))


def _inside(a, node, outer) -> bool:
    return any(p is outer for p in a.ancestors(node))


def _pure(c: cst.Call) -> bool:
    if isinstance(c.func, cst.Name):
        return c.func.value in apis.PURE_CALLS
    return method_name(c) in apis.PURE_METHODS


def _method_or_name(c: cst.Call):
    if isinstance(c.func, cst.Name):
        return c.func.value
    return method_name(c)


def _unused_name(ctx, preferred: str) -> str:
    used = ctx.state("guards.names_in_module")
    if not used:
        used.update(n.value for n in walk(ctx.a.module) if isinstance(n, cst.Name))
    name = ctx.imports.free_name(preferred)
    while name in used:
        name = "_" + name
    used.add(name)
    return name
