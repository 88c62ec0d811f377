"""This process's rank and world size."""
from __future__ import annotations

import json
import os
import sys

from .state import note_error
from .tables import RANK_ENV_VARS, SIZE_ENV_VARS, TF_CONFIG_ENV, TF_CONFIG_RANKED_TASKS


def rank_and_size():
    rank = size = None
    source = "default"
    for var in RANK_ENV_VARS:
        if os.environ.get(var, "").strip().isdigit():
            rank, source = int(os.environ[var]), "env:" + var
            break
    for var in SIZE_ENV_VARS:
        if os.environ.get(var, "").strip().isdigit():
            size = int(os.environ[var])
            break
    hvd_rank = hvd_size = None
    for mod_name in ("horovod.tensorflow", "horovod.tensorflow.keras", "horovod.keras"):
        hvd = sys.modules.get(mod_name)
        if hvd is None:
            continue
        try:
            if hvd.is_initialized():
                hvd_rank, hvd_size = int(hvd.rank()), int(hvd.size())
                break
        except Exception:  # noqa: BLE001
            continue
    if rank is None and hvd_rank is not None:
        rank, size, source = hvd_rank, hvd_size, "horovod"
    if rank is None:
        tf_rank, tf_size = _tf_config_rank()
        if tf_rank is not None:
            rank, size, source = tf_rank, tf_size, "tf-config"
    if rank is None:
        rank = 0
    if size is None:
        size = hvd_size if hvd_size is not None else 1
    return rank, size, source, hvd_rank, hvd_size


def _tf_config_rank():
    """(rank, size) from TF_CONFIG: chief first, then the workers by index;
    (None, None) when unset, malformed, or the task is no rank (ps, evaluator)."""
    text = os.environ.get(TF_CONFIG_ENV, "").strip()
    if not text:
        return None, None
    try:
        config = json.loads(text)
        cluster = config.get("cluster") or {}
        task = config.get("task") or {}
        offsets, size = {}, 0
        for kind in TF_CONFIG_RANKED_TASKS:
            offsets[kind] = size
            size += len(cluster.get(kind) or [])
        kind, index = task.get("type"), int(task.get("index", 0))
        if kind not in offsets:
            return None, None
        return offsets[kind] + index, size
    except Exception as exc:  # noqa: BLE001
        note_error("tf_config", exc)
        return None, None
