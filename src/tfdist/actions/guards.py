"""Running a statement on one process only: the rank guard around it.

Files and console output on rank 0 only, for every pattern.

Model saves, checkpoint saves, TF1 ``Saver.save`` and ``print`` statements go
under ``if hvd.rank() == 0:``; summary writers are no-op writers on other
ranks. Only statements that cannot run a collective operation are guarded
(a guarded collective deadlocks): a print whose arguments call anything
but pure built-ins, for instance, is left alone.

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
from ..facts.collectives import call_collective_free
from ..facts.syntax import calls_in, source
from ..facts.writes import RULE


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
