"""Where a script trains with a TF1 Session (the pattern and its evidence).

TF1 ``tf.Session`` training (also through ``tensorflow.compat.v1``).

Horovod's TF1 recipe: DistributedOptimizer with a scaled learning rate;
``hvd.broadcast_global_variables(0)`` run right after the variables are
initialised (the op is built there, after ``minimize()``, so the optimizer's
slot variables are included); the session's config pins one GPU; the step
loop is divided and the input pipeline sharded.
"""
from __future__ import annotations

from typing import List, Optional
import libcst as cst
from .. import apis
from ..engine.memo import fact
from ..engine import analysis as A
from ..engine import patterns as P
from ..engine.findings import Evidence
from .syntax import receiver
from . import tf1_train_ops


PATTERN = P.SESSION


@fact
def sessions(a: A.Analysis) -> List[cst.Call]:
    return [c for c in a.calls if a.is_name(c, apis.TF1_SESSIONS)]


@fact
def detect(a: A.Analysis) -> List[Evidence]:
    if not tf1_train_ops.optimizer_calls(a):
        return []
    found = sessions(a)
    if any(a.is_name(c, apis.TF1_MONITORED_SESSIONS) for c in a.calls):
        # Next to a MonitoredSession, a tf.Session that only evaluates or
        # exports is no second training pattern.
        found = [s for s in found if _trains(a, s)]
    return [Evidence(P.SESSION, f"{a.code(c.func)}(...) running a TF1 optimizer", a.line(c)) for c in found]


def _session_of(a: A.Analysis, run: cst.Call) -> Optional[cst.BaseExpression]:
    """The session expression ``run`` was called on (the binding before it)."""
    recv = receiver(run)
    if isinstance(recv, cst.Call):
        return recv
    best = None
    if isinstance(recv, cst.Name):
        for origin, value in a.assigned_values(recv):
            if value is not None and a.line(origin) <= a.line(run):
                best = value
    return best


def _trains(a: A.Analysis, session: cst.Call) -> bool:
    train_ops = tf1_train_ops.train_op_names(a)
    interactive = a.is_name(session, {"tensorflow.InteractiveSession"})
    item = a.parent(session)
    with_stmt = a.parent(item) if isinstance(item, cst.WithItem) else None
    for run in tf1_train_ops.train_runs(a, a.module, train_ops):
        if _session_of(a, run) is session:
            return True
        recv = receiver(run)
        op_run = (isinstance(recv, cst.Name) and recv.value in train_ops) or isinstance(recv, cst.Call)
        if op_run and (interactive or (with_stmt is not None and any(x is with_stmt for x in a.ancestors(run)))):
            return True
    return False
