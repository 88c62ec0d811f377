"""TF1 ``tf.Session`` training (also through ``tensorflow.compat.v1``).

Horovod's TF1 recipe: DistributedOptimizer with a scaled learning rate;
``hvd.broadcast_global_variables(0)`` run right after the variables are
initialised (the op is built there, after ``minimize()``, so the optimizer's
slot variables are included); the session's config pins one GPU; the step
loop is divided and the input pipeline sharded.
"""
from __future__ import annotations

from typing import List

import libcst as cst

from .. import apis
from ..engine import analysis as A
from ..engine.findings import Evidence
from . import data_division, tf1_common
from .common import calls_in, mentions, method_name, receiver

PATTERN = "Session"
RULE = "session"


def sessions(a: A.Analysis) -> List[cst.Call]:
    return [c for c in a.calls if a.is_name(c, apis.TF1_SESSIONS)]


def detect(a: A.Analysis) -> List[Evidence]:
    if not tf1_common.optimizer_calls(a):
        return []
    return [Evidence(PATTERN, f"{a.code(c.func)}(...) running a TF1 optimizer", a.line(c)) for c in sessions(a)]


def _initializer_runs(a: A.Analysis):
    """(statement, session expression or None) where variables get initialised."""
    init_names = set()
    for c in a.calls:
        if a.is_name(c, apis.TF1_INITIALIZERS):
            for anc in a.ancestors(c):
                if isinstance(anc, cst.Assign) and len(anc.targets) == 1 and isinstance(anc.targets[0].target, cst.Name):
                    init_names.add(anc.targets[0].target.value)
                    break
                if isinstance(anc, cst.BaseStatement):
                    break

    def is_init(expr) -> bool:
        return mentions(expr, init_names) or any(a.is_name(x, apis.TF1_INITIALIZERS) for x in calls_in(expr))

    out = []
    for c in a.calls:
        if method_name(c) != "run":
            continue
        if c.args and is_init(c.args[0].value):
            out.append((a.statement_of(c), receiver(c)))
        elif not c.args and is_init(receiver(c)):
            out.append((a.statement_of(c), None))
    return out


def apply(ctx) -> None:
    a = ctx.a
    tf1_common.wrap_optimizers(ctx)
    runs = _initializer_runs(a)
    if not runs:
        raise ctx.unsupported(sessions(a)[0], "no variable initialisation (sess.run(tf.global_variables_initializer())) found: cannot place the broadcast of initial variables from rank 0")
    op = ctx.backend.tf1_broadcast_op()
    for stmt, sess in runs:
        code = f"{a.code(sess)}.run({op})" if sess is not None else f"{op}.run()"
        ctx.plan.insert_after(stmt, ctx.stmts(code, comment="Horovod: broadcast initial variables from rank 0."))
        ctx.change(stmt, "broadcast", "initial variables broadcast from rank 0 right after initialisation")
    for s in sessions(a):
        tf1_common.pin_config(ctx, s, 2)
    sharded = tf1_common.shard_input(ctx)
    train_ops = tf1_common.train_op_names(a)
    for loop in a.for_loops:
        if not tf1_common.runs_train_op(a, loop.body, train_ops):
            continue
        inner = [l for l in a.for_loops if l is not loop and any(x is loop for x in a.ancestors(l))
                 and tf1_common.runs_train_op(a, l.body, train_ops)]
        if inner:
            continue  # the innermost training loop is the step loop
        it = loop.iter
        if isinstance(it, cst.Call) and isinstance(it.func, cst.Name) and it.func.value == "range" and len(it.args) == 1:
            data_division.divide(ctx, it.args[0].value, "training steps")
        else:
            ctx.warn(loop, data_division.RULE, "cannot divide this training loop: make each rank run 1/size of its steps")
    if not sharded:
        ctx.warn(sessions(a)[0], data_division.RULE, "no tf.data pipeline found: make sure each rank feeds different samples (e.g. shard the arrays fed through feed_dict by hvd.rank())")
