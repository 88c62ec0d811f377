"""TF1 ``tf.Session`` training (also through ``tensorflow.compat.v1``).

Horovod's TF1 recipe: DistributedOptimizer with a scaled learning rate;
``hvd.broadcast_global_variables(0)`` run right after the variables are
initialised (the op is built there, after ``minimize()``, so the optimizer's
slot variables are included); the session's config pins one GPU; the step
loop is divided and the input pipeline sharded.
"""
from __future__ import annotations

from typing import Set
import libcst as cst
from .. import apis
from ..engine import analysis as A
from ..facts.sessions import PATTERN, detect, sessions
from ..facts.syntax import calls_in, mentions, method_name, receiver
from ..actions import tf1_edits
from ..facts import kinds
from ..engine.rule import Rule, register


RULE = kinds.SESSION


def _initializer_runs(a: A.Analysis):
    """(statement, session expression or None) where variables get initialised."""
    init_names: Set[str] = set()
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


def _after_restores(a: A.Analysis, stmt):
    """The statement after which variables hold their starting values: the
    initialisation, or a ``saver.restore(...)`` right after it in the same block
    (rank 0's restored values are then what every rank starts from)."""
    block = a.parent(stmt)
    body = list(getattr(block, "body", ()))
    if stmt not in body:
        return stmt
    anchor = stmt
    for later in body[body.index(stmt) + 1:]:
        if any(method_name(c) == "restore" and a.is_kind(receiver(c), A.SAVER) for c in calls_in(later)):
            anchor = later
    return anchor


def apply(ctx) -> None:
    a = ctx.a
    tf1_edits.check_convertible(ctx)
    tf1_edits.wrap_optimizers(ctx)
    runs = _initializer_runs(a)
    if not runs:
        raise ctx.unsupported(sessions(a)[0], "no variable initialisation (sess.run(tf.global_variables_initializer())) found: cannot place the broadcast of initial variables from rank 0")
    first_init = min(a.line(stmt) for stmt, _ in runs)
    for c in a.calls:
        if method_name(c) == "finalize" and not c.args and a.line(c) < first_init:
            raise ctx.unsupported(c, ctx.say("the graph is finalized before the variables are initialised: the broadcast "
                                             "of initial variables cannot be added to it (build {broadcast_op} "
                                             "before finalize() by hand)"))
    op = ctx.backend.tf1_broadcast_op()
    for stmt, sess in runs:
        code = f"{a.code(sess)}.run({op})" if sess is not None else f"{op}.run()"
        anchor = _after_restores(a, stmt)
        ctx.plan.insert_after(anchor, ctx.stmts(code, comment=ctx.say("{engine}: broadcast initial variables from rank 0.")))
        where = "initialisation" if anchor is stmt else "initialisation and checkpoint restore"
        ctx.change(stmt, "broadcast", f"initial variables broadcast from rank 0 right after {where}")
    for s in sessions(a):
        tf1_edits.pin_config(ctx, s, 2)
    sharded = tf1_edits.shard_input(ctx)
    tf1_edits.divide_fed_data(ctx, sharded, sessions(a)[0])


@register
class Tf1Session(Rule):
    id = "tf1-session"
    description = "TF1 Session training under Horovod: DistributedOptimizer, the broadcast of initial variables after initialisation, one GPU per process, divided feeds or input."
    engines = ('horovod',)
    kinds = ('broadcast', 'data-division', 'distributed-optimizer', 'gpu-pinning', 'lr-scaling', 'lr-warmup')
    refuses = "no variable initialisation found; a graph finalized before initialisation; scripts already distributed with parameter servers"
    example = "session/in_graph_samples"
    order = 30
    PATTERN = PATTERN

    def detect(self, a):
        return detect(a)

    def apply(self, ctx) -> None:
        apply(ctx)
