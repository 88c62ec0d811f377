"""Files and console output on rank 0 only, for every pattern.

Model saves, checkpoint saves, TF1 ``Saver.save`` and ``print`` statements go
under ``if hvd.rank() == 0:``; summary writers are no-op writers on other
ranks. Only statements that cannot run a collective operation are guarded
(a guarded collective deadlocks): a print whose arguments call anything
but pure built-ins, for instance, is left alone.
"""
from __future__ import annotations

import libcst as cst

from .. import apis
from ..engine import analysis as A
from .common import calls_in, method_name, receiver, source

RULE = "rank0-io"


# Calls that run an optimizer step, directly or through a session.
TRAINING_METHODS = {"apply_gradients", "minimize", "fit", "fit_generator", "train_on_batch", "gradient", "run"}


def _pure(a: A.Analysis, call: cst.Call) -> bool:
    """True if the call's arguments can never run a collective operation."""
    return all(_collective_free(a, c, set()) for arg in call.args for c in calls_in(arg))


def _collective_free(a: A.Analysis, c: cst.Call, seen: set) -> bool:
    if isinstance(c.func, cst.Name) and c.func.value in apis.PURE_CALLS:
        return True
    m = method_name(c)
    if m in apis.PURE_METHODS:
        return True
    # Keras evaluate/predict and forward passes run no collective: the
    # distributed optimizer only acts in training steps.
    if m in apis.KERAS_VERBOSE_METHODS and a.is_kind(receiver(c), A.MODEL):
        return True
    if a.is_kind(c.func, A.MODEL):
        return True
    if m in TRAINING_METHODS:
        return False
    if isinstance(c.func, cst.Name):
        functions = a._local_functions(c.func)
        if not functions:
            return False
        for f in functions:
            if id(f) in seen:
                continue
            seen.add(id(f))
            if not all(_collective_free(a, inner, seen) for inner in calls_in(f.body)
                       if not _is_harmless_library_call(a, inner)):
                return False
        return True
    return _is_harmless_library_call(a, c)


def _is_harmless_library_call(a: A.Analysis, c: cst.Call) -> bool:
    """Numerical library calls (numpy, tf.math, ...) that are not training."""
    if method_name(c) in TRAINING_METHODS:
        return False
    names = a.names(c)
    return any(n.startswith(("numpy.", "tensorflow.", "math.", "builtins.")) for n in names) and not any(
        n.startswith("tensorflow.distribute") for n in names)


def _guard(ctx, call: cst.Call, what: str) -> None:
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
    else:
        ctx.warn(call, RULE, f"{what}: run it on rank 0 only (hvd.rank() == 0) by hand")


def apply(ctx) -> None:
    a = ctx.a
    tf = None
    for call in a.calls:
        m = method_name(call)
        recv = receiver(call)
        names = a.names(call)
        if "builtins.print" in names:
            if _pure(a, call):
                _guard(ctx, call, "console output")
            continue
        if m in apis.KERAS_PRINT_METHODS and recv is not None and a.is_kind(recv, A.MODEL):
            _guard(ctx, call, f"{a.code(call.func)}()")
        elif m in apis.KERAS_SAVE_METHODS and recv is not None and a.is_kind(recv, A.MODEL):
            _guard(ctx, call, f"{a.code(call.func)}()")
        elif names & apis.KERAS_SAVE_FUNCTIONS:
            _guard(ctx, call, f"{a.code(call.func)}()")
        elif m in apis.CHECKPOINT_SAVE_METHODS and recv is not None and a.is_kind(recv, A.CHECKPOINT):
            _guard(ctx, call, f"checkpoint {a.code(call.func)}()")
        elif m == "save" and recv is not None and a.is_kind(recv, A.SAVER):
            _guard(ctx, call, f"{a.code(call.func)}()")
        elif apis.TF2_FILE_WRITER in names:
            tf = tf or ctx.name("tf")
            noop = f"{_summary_prefix(ctx, call)}.create_noop_writer()"
            new = ctx.expr(f"{source(a.module, call)} if {ctx.backend.is_chief()} else {noop}")
            ctx.plan.replace(call, lambda old, new=new: new)
            ctx.change(call, RULE, "summaries written on rank 0 only (a no-op writer elsewhere)")
        elif apis.TF1_FILE_WRITER in names:
            _tf1_writer(ctx, call)


def _summary_prefix(ctx, call: cst.Call) -> str:
    if isinstance(call.func, cst.Attribute):
        return ctx.a.code(call.func.value)
    return f"{ctx.name('tf')}.summary"


def _tf1_writer(ctx, call: cst.Call) -> None:
    """A TF1 FileWriter exists on rank 0 only; its uses are guarded."""
    a = ctx.a
    stmt = a.statement_of(call)
    small = stmt.body[0] if isinstance(stmt, cst.SimpleStatementLine) and len(stmt.body) == 1 else None
    if not (isinstance(small, cst.Assign) and small.value is call and len(small.targets) == 1
            and isinstance(small.targets[0].target, cst.Name)):
        ctx.warn(call, RULE, "create this FileWriter on rank 0 only by hand")
        return
    name = small.targets[0].target.value
    _guard(ctx, call, "summary FileWriter")
    for c in a.calls:
        if isinstance(receiver(c), cst.Name) and receiver(c).value == name and a.line(c) > a.line(call):
            s = a.statement_of(c)
            if isinstance(s, cst.SimpleStatementLine) and len(s.body) == 1 and isinstance(s.body[0], cst.Expr):
                if ctx.plan.guard(s, ctx.expr(ctx.backend.is_chief())):
                    ctx.change(c, RULE, f"{a.code(c.func)}() on rank 0 only")
            else:
                ctx.warn(c, RULE, f"{name} exists on rank 0 only: guard this use with hvd.rank() == 0")
