"""The result record: built and written as ``rank-<R>.json`` at exit."""
from __future__ import annotations

import json
import os
import socket
import sys
import time

from .devices import replica_copies_info, strategies_info
from .files import drop_unchanged_in_place, path_exists
from .hashing import digest_arrays
from .keras import rate_at_start
from .ranks import rank_and_size
from .samples import samples_record
from .state import RECORD_VERSION, STATE, ProbeBusy, note_error
from .patch import install_patch
from .tables import KERAS_ITERATIONS_ATTR, MULTI_WORKER_TEMP_DIR, TF_SERVER_JOIN
from .tf1 import snapshot_session
from .variables import eager_value, is_float_variable, is_graph_variable


def _collect_variables():
    """([(name, value)] trainable, [(name, value)] other, unreadable count).
    Eager variables in creation order, then each TF1 graph's snapshot."""
    trainable, non_trainable, unreadable = [], [], 0
    with ProbeBusy():
        for var in list(STATE.variables):
            if id(var) in STATE.component_ids or is_graph_variable(var):
                continue
            try:
                value = eager_value(var)
            except Exception:  # noqa: BLE001
                unreadable += 1
                continue
            name = getattr(var, "name", "?")
            if getattr(var, "trainable", False) and is_float_variable(var):
                trainable.append((name, value))
            else:
                non_trainable.append((name, value))
        # TF1 graphs: sessions still open at exit, then stored snapshots.
        for ref in list(STATE.sessions):
            sess = ref()
            if sess is not None:
                snapshot_session(sess)
    for key in STATE.graph_order:
        snap = STATE.graph_snapshots[key]
        trainable.extend(zip(snap["names"], snap["values"]))
    return trainable, non_trainable, unreadable


def _optimizer_info():
    keras = []
    snap_iters = {}
    for snap in STATE.graph_snapshots.values():
        snap_iters.update(snap.get("opt_iters", {}))
    with ProbeBusy():
        for opt in list(STATE.keras_optimizers):
            entry = {"class": type(opt).__name__, "iterations": None}
            try:
                it = getattr(opt, KERAS_ITERATIONS_ATTR, None)
                if it is None:
                    entry["iterations"] = 0
                elif not is_graph_variable(it):
                    entry["iterations"] = int(eager_value(it))
                elif str(id(opt)) in snap_iters:
                    entry["iterations"] = snap_iters[str(id(opt))]
            except Exception as exc:  # noqa: BLE001
                note_error("optimizer_iterations", exc)
            try:  # its learning rate when the run ended (a schedule's at step 0)
                entry["rate"] = rate_at_start(opt)
            except Exception:  # noqa: BLE001 -- a rate the probe cannot read (in a graph) is left unrecorded
                entry["rate"] = None
            keras.append(entry)
    global_steps = [s["global_step"] for s in STATE.graph_snapshots.values() if s.get("global_step") is not None]
    global_step = max(global_steps) if global_steps else None
    keras_max = max((e["iterations"] or 0 for e in keras), default=0)
    steps = max(keras_max, STATE.tf1_train_runs, STATE.tf1_eager_applies)
    source = None
    if steps:
        if steps == keras_max:
            source = "keras-iterations"
        elif steps == STATE.tf1_train_runs:
            source = "tf1-session-runs"
        else:
            source = "tf1-eager-apply"
    elif global_step:
        steps, source = global_step, "global-step"
    elif STATE.eager_tape_gradients:
        # no optimizer stepped: a step written by hand, one gradient() per step
        steps, source = STATE.eager_tape_gradients, "eager-tape-gradients"
    return {
        "steps": steps,
        "source": source,
        "keras": keras,
        "tf1_train_runs": STATE.tf1_train_runs,
        "tf1_train_ops": len(STATE.train_ops),
        "tf1_eager_applies": STATE.tf1_eager_applies,
        "eager_tape_gradients": STATE.eager_tape_gradients,
        "global_step": global_step,
        "fit_rates": list(STATE.fit_rates),
    }


def build_record() -> dict:
    rank, size, source, hvd_rank, hvd_size = rank_and_size()
    record = {
        "version": RECORD_VERSION,
        "rank": rank,
        "size": size,
        "rank_source": source,
        "hvd_rank": hvd_rank,
        "hvd_size": hvd_size,
        "pid": os.getpid(),
        "host": socket.gethostname(),
        "script": STATE.script,
        "cwd": STATE.start_cwd,
        "exit_code": STATE.exit_code,
        "exit_how": STATE.exit_how,
        "exception": STATE.exception,
        "elapsed_s": round(time.time() - STATE.start, 3),
        "tensorflow_imported": "tensorflow" in sys.modules,
    }
    try:
        record["variables"] = _variables_record()
    except Exception as exc:  # noqa: BLE001
        note_error("variables", exc)
        record["variables"] = None
    try:
        record["optimizer"] = _optimizer_info()
    except Exception as exc:  # noqa: BLE001
        note_error("optimizer", exc)
        record["optimizer"] = None
    record["files"] = _files_record()
    try:
        record["replica_copies"] = replica_copies_info()
        record["local_devices"] = STATE.local_devices
    except Exception as exc:  # noqa: BLE001
        note_error("replica_copies", exc)
    try:
        record["strategies"] = strategies_info()
    except Exception as exc:  # noqa: BLE001
        note_error("strategies", exc)
        record["strategies"] = []
    record["steps_cap"] = {
        "cap": STATE.max_steps,
        "applied": STATE.cap_applied,
        "fit_calls": STATE.fit_calls,
        "planned_steps": None if (STATE.planned_unknown or not STATE.fit_calls) else STATE.planned_steps,
    }
    try:
        record["samples"] = samples_record()
    except Exception as exc:  # noqa: BLE001
        note_error("samples", exc)
        record["samples"] = None
    if STATE.record_losses:
        record["losses"] = {"steps": [list(p) for p in STATE.loss_steps], "stride": STATE.loss_stride,
                            "seen": STATE.loss_seen, "fit_batches": STATE.loss_batches,
                            "fit_epochs": STATE.loss_epochs}
    record["probe_errors"] = list(STATE.errors)
    return record


def _variables_record() -> dict:
    """The digests of the trainable variables (each one's too) and of the others."""
    trainable, non_trainable, unreadable = _collect_variables()
    sha, fsum, items = digest_arrays([v for _, v in trainable])
    nsha, _, _ = digest_arrays([v for _, v in non_trainable])
    return {
        "trainable_count": len(trainable),
        "trainable_sha256": sha,
        "trainable_sum": fsum,
        "trainable": [
            {"name": name, "shape": list(getattr(value, "shape", ())),
             "dtype": str(getattr(value, "dtype", "?")), "digest": digest}
            for (name, value), digest in zip(trainable, items)
        ],
        "non_trainable_count": len(non_trainable),
        "non_trainable_sha256": nsha,
        "unreadable": unreadable,
        "tf1_graphs": len(STATE.graph_order),
    }


def _files_record() -> list[dict]:
    """The files the process wrote, each with whether it still exists and
    whether it lies in a multi-worker temporary directory."""
    files = []
    for entry in list(STATE.files.values()):
        entry = dict(entry)
        try:
            entry["exists_at_exit"] = path_exists(entry["path"])
        except Exception:  # noqa: BLE001
            entry["exists_at_exit"] = None
        entry["multi_worker_temp"] = bool(MULTI_WORKER_TEMP_DIR.search(entry["path"]))
        files.append(entry)
    return files


def write_record() -> str | None:
    """Write this process's record once; returns its path."""
    if STATE.written or STATE.pid != os.getpid():
        return None
    STATE.written = True
    try:
        drop_unchanged_in_place()
        record = build_record()
    except Exception as exc:  # noqa: BLE001
        note_error("build_record", exc)
        record = {"version": RECORD_VERSION, "rank": 0, "exit_code": STATE.exit_code,
                  "probe_errors": list(STATE.errors)}
    out_dir = STATE.probe_dir
    if not out_dir:
        sys.stderr.write("tfdist probe: " + json.dumps({
            "rank": record.get("rank"),
            "exit_code": record.get("exit_code"),
            "steps": (record.get("optimizer") or {}).get("steps"),
            "trainable_sha256": (record.get("variables") or {}).get("trainable_sha256"),
            "files": [f["path"] for f in record.get("files", [])],
        }) + "\n")
        return None
    try:
        with ProbeBusy():
            os.makedirs(out_dir, exist_ok=True)
            name = f"rank-{record.get('rank', 0)}.json"
            path = os.path.join(out_dir, name)
            if os.path.exists(path):
                path = os.path.join(out_dir, f"rank-{record.get('rank', 0)}-pid{os.getpid()}.json")
            tmp = path + ".tmp"
            with open(tmp, "w", encoding="utf-8") as fh:
                json.dump(record, fh, indent=1, default=str)
            os.replace(tmp, path)
        return path
    except Exception as exc:  # noqa: BLE001
        sys.stderr.write(f"tfdist probe: could not write record: {exc}\n")
        return None


def atexit_write():
    if STATE.exit_code is None:
        STATE.exit_code, STATE.exit_how = 0, "atexit"
    write_record()


def install_server_join_record():
    """A worker or parameter-server task of a ParameterServerStrategy cluster
    serves in ``tf.distribute.Server.join()`` until the launcher kills it
    when the chief ends (no atexit runs then): its record -- the files it
    wrote, its exit status "serving" -- is written as it starts serving."""
    def make(orig):
        def join(self, *args, **kwargs):
            try:
                if STATE.pid == os.getpid() and not STATE.written:
                    STATE.exit_code, STATE.exit_how = None, "serving"
                    write_record()
            except Exception as exc:  # noqa: BLE001
                note_error("server_join", exc)
            return orig(self, *args, **kwargs)
        return join

    module_name, qualname = TF_SERVER_JOIN
    install_patch(module_name, qualname, make)
