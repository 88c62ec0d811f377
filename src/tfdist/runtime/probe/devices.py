"""tf.distribute: the strategies the script built, the CPU split into
logical devices (TFDIST_PROBE_LOCAL_DEVICES) and the copies of a variable on
this process's devices."""
from __future__ import annotations

import os

from .patch import install_patch
from .state import LOCAL_DEVICES_ENV, STATE, ProbeBusy, note_error
from .tables import TF_DEFAULT_STRATEGY_CLASS_NAMES, TF_STRATEGY_BASE_CLASS
from .variables import is_float_variable


def install_strategy_tracking():
    def make(orig):
        def __init__(self, *args, **kwargs):
            orig(self, *args, **kwargs)
            try:
                if STATE.pid == os.getpid() and type(self).__name__ not in TF_DEFAULT_STRATEGY_CLASS_NAMES:
                    with STATE.lock:
                        if not any(s is self for s in STATE.strategies):
                            STATE.strategies.append(self)
            except Exception as exc:  # noqa: BLE001
                note_error("strategy_init", exc)
        return __init__

    module_name, cls_name = TF_STRATEGY_BASE_CLASS
    install_patch(module_name, cls_name + ".__init__", make)


def strategies_info() -> list[dict]:
    out = []
    for strategy in list(STATE.strategies):
        entry = {"class": type(strategy).__name__}
        with ProbeBusy():
            try:
                entry["num_replicas_in_sync"] = int(strategy.num_replicas_in_sync)
            except Exception as exc:  # noqa: BLE001
                note_error("strategy_replicas", exc)
            extended = getattr(strategy, "extended", None)
            workers = getattr(extended, "_num_workers", None)
            entry["num_workers"] = int(workers) if isinstance(workers, int) else 1
            try:
                entry["should_checkpoint"] = bool(extended.should_checkpoint)
            except Exception:  # noqa: BLE001
                entry["should_checkpoint"] = None
            resolver = getattr(strategy, "cluster_resolver", None)
            entry["task_type"] = getattr(resolver, "task_type", None) if resolver is not None else None
            entry["task_id"] = getattr(resolver, "task_id", None) if resolver is not None else None
        out.append(entry)
    return out


def split_local_cpu(tf_module) -> None:
    """Present the CPU as N logical devices before TensorFlow initialises its
    devices: ``MirroredStrategy()`` replicates over every local GPU, else over
    every logical CPU (``all_local_devices`` in
    tensorflow/python/distribute/mirrored_strategy.py), so the script's own
    strategy then runs N replicas in this process, as on a host with N GPUs."""
    text = os.environ.get(LOCAL_DEVICES_ENV, "").strip()
    if not text.isdigit() or int(text) < 2:
        return
    cpus = tf_module.config.list_physical_devices("CPU")
    tf_module.config.set_logical_device_configuration(
        cpus[0], [tf_module.config.LogicalDeviceConfiguration() for _ in range(int(text))])
    STATE.local_devices = int(text)


def replica_copies_info() -> dict:
    """Compare, per trainable tf.distribute variable, the copies this process
    holds on its devices (MirroredStrategy over several local devices): they
    must be bitwise identical after every step (gradients all-reduced)."""
    checked, differing = 0, []
    dist_cls = STATE.distributed_var_class
    if dist_cls is None:
        return {"checked": 0, "differing": []}
    with ProbeBusy():
        import numpy

        for var in list(STATE.variables):
            if not isinstance(var, dist_cls) or not getattr(var, "trainable", False) or not is_float_variable(var):
                continue
            copies = list(getattr(var, "_values", None) or ())
            if len(copies) < 2:
                continue
            try:
                first = copies[0].numpy()
                same = all(numpy.array_equal(first, c.numpy()) for c in copies[1:])
            except Exception as exc:  # noqa: BLE001
                note_error("replica_copies", exc)
                continue
            checked += 1
            if not same:
                differing.append(getattr(var, "name", "?"))
    return {"checked": checked, "differing": differing}
