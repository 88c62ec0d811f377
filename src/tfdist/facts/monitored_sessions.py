"""Where a script trains with TF1's MonitoredTrainingSession (the pattern and its evidence).

TF1 ``tf.train.MonitoredTrainingSession`` / ``MonitoredSession`` training.

Horovod's recipe: ``BroadcastGlobalVariablesHook(0)`` in the hooks,
checkpoints and summaries only on rank 0 (``checkpoint_dir=None``
elsewhere, chief-only hooks and file-writing hooks on rank 0 only),
``StopAtStepHook`` steps divided, one GPU per process.
"""
from __future__ import annotations

from typing import List
import libcst as cst
from .. import apis
from ..engine.memo import fact
from ..engine import analysis as A
from ..engine import patterns as P
from ..engine.findings import Evidence
from . import tf1_train_ops


PATTERN = P.MONITORED


@fact
def monitored(a: A.Analysis) -> List[cst.Call]:
    return [c for c in a.calls if a.is_name(c, apis.TF1_MONITORED_SESSIONS)]


@fact
def detect(a: A.Analysis) -> List[Evidence]:
    if not tf1_train_ops.optimizer_calls(a):
        return []  # evaluation only: nothing to distribute
    return [Evidence(P.MONITORED, f"{a.code(c.func)}(...)", a.line(c)) for c in monitored(a)]
