"""Samples: rows hashed per batch, and the ``tf1-feed`` and ``iterator``
sources (the ``tape`` and ``keras-fit`` sources live in tape.py and keras.py)."""
from __future__ import annotations

import os
import threading

from .hashing import combine_row_hashes, row_hashes
from .patch import install_patch, resolve
from .state import SAMPLE_HASH, STATE, ProbeBusy, probe_busy, note_error
from .tables import (KERAS_ITERATIONS_ATTR, TF_DATA_ITERATOR_CLASS, TF_DISTRIBUTED_ITERATOR_CLASS,
                     TF_EAGER_TENSOR_CLASS, TF_PER_REPLICA_CLASS_NAMES)
from .variables import eager_value, is_graph_variable


def _keep_value(digest: str, row) -> None:
    if len(STATE.sample_values) >= STATE.sample_values_cap or digest in STATE.sample_values:
        return
    import base64

    import numpy as np

    arr = np.array(row, copy=True, order="C")   # keeps 0-d rows 0-d (ascontiguousarray would not)
    if arr.dtype == object:
        return
    STATE.sample_values[digest] = {"dtype": arr.dtype.str, "shape": list(arr.shape),
                                   "b64": base64.b64encode(arr.tobytes()).decode("ascii")}


def _columns(value):
    """(row hashes, numpy array or None) of one element/feed value; nested
    tuples/lists/dicts of arrays with one leading dimension are one column."""
    if isinstance(value, dict):
        parts = [_columns(v) for v in value.values()]
    elif isinstance(value, (tuple, list)) and value and not is_plain_list(value):
        parts = [_columns(v) for v in value]
    else:
        arr = _as_array(value)
        if arr is None or arr.ndim == 0:
            return None
        hashes = row_hashes(arr)
        return (hashes, arr) if hashes is not None else None
    if not parts or any(p is None for p in parts) or len({len(p[0]) for p in parts}) != 1:
        return None
    return combine_row_hashes([p[0] for p in parts]), (parts[0][1] if len(parts) == 1 else None)


def is_plain_list(value) -> bool:
    """A Python list of numbers (a literal batch) rather than a structure of
    arrays; NumPy scalars are numbers too (``[x]`` with ``x`` one float32 of
    a row, a batch of one sample)."""
    import numpy as np

    first = value[0]
    return isinstance(first, (int, float, bool, str, bytes, np.generic)) or (
        isinstance(first, (list, tuple)) and first and isinstance(first[0], (int, float, bool, np.generic)))


def _as_array(value):
    import numpy as np

    if isinstance(value, np.ndarray):
        return value
    if isinstance(value, (list, tuple, int, float, bool)):
        try:
            arr = np.asarray(value)
        except Exception:  # noqa: BLE001
            return None
        return arr if arr.dtype != object else None
    eager = resolve(*TF_EAGER_TENSOR_CLASS)
    if eager is not None and isinstance(value, eager[2]):
        return value.numpy()
    return None


def record_batch(source: str, items: list, **meta) -> dict | None:
    """items: fed values / element components in order; the first with a
    leading dimension is the sample, the others with the same leading
    dimension its labels."""
    if STATE.sample_rows >= STATE.sample_cap:
        STATE.sample_capped = True
        return None
    cols = []
    for item in items:
        col = _columns(item)
        if col is None:
            continue
        if cols and len(col[0]) != len(cols[0][0]):
            continue
        cols.append(col)
    if not cols:
        return
    n = len(cols[0][0])
    with STATE.lock:
        room = STATE.sample_cap - STATE.sample_rows
        if room <= 0:
            STATE.sample_capped = True
            return
        if n > room:
            STATE.sample_capped = True
            n = room
        rows = [":".join(c[0][i] for c in cols) for i in range(n)]
        STATE.sample_rows += n
        entry = {"source": source, **meta, "rows": rows}
        STATE.sample_batches.append(entry)
        if STATE.sample_values_cap:
            for hashes, arr in cols:
                if arr is None:
                    continue
                for i in range(n):
                    _keep_value(hashes[i], arr[i])
    return entry


def step_counter() -> int:
    """Optimizer steps so far in this process (eager Keras optimizers' iterations
    plus TF1 train runs / eager TF1 applies)."""
    total = STATE.tf1_train_runs + STATE.tf1_eager_applies
    with ProbeBusy():
        for opt in list(STATE.keras_optimizers):
            it = getattr(opt, KERAS_ITERATIONS_ATTR, None)
            if it is None or is_graph_variable(it):
                continue
            try:
                total += int(eager_value(it))
            except Exception:  # noqa: BLE001
                pass
    return total


def record_feed(feed_dict, step: int) -> None:
    if not isinstance(feed_dict, dict) or not feed_dict:
        return
    record_batch("tf1-feed", list(feed_dict.values()), step=step)


def install_iterator_hook():
    def make(orig):
        def __next__(self):
            element = orig(self)
            if STATE.pid == os.getpid() and not probe_busy() and not getattr(_DIST_NEXT, "depth", 0):
                try:
                    _record_element(self, element)
                except Exception as exc:  # noqa: BLE001
                    note_error("iterator_next", exc)
            return element
        return __next__

    mod, cls = TF_DATA_ITERATOR_CLASS
    install_patch(mod, cls + ".__next__", make)

    def make_distributed(orig):
        def __next__(self):
            depth = getattr(_DIST_NEXT, "depth", 0)
            _DIST_NEXT.depth = depth + 1
            try:
                element = orig(self)
            finally:
                _DIST_NEXT.depth = depth
            if depth == 0 and STATE.pid == os.getpid() and not probe_busy():
                try:
                    from tensorflow.python.eager import context  # noqa: PLC0415

                    if context.executing_eagerly() and not STATE.peeking:
                        _record_element(self, _local_batches(element))
                except Exception as exc:  # noqa: BLE001
                    note_error("distributed_iterator_next", exc)
            return element
        return __next__

    mod, cls = TF_DISTRIBUTED_ITERATOR_CLASS
    install_patch(mod, cls + ".__next__", make_distributed)


#: Depth of DistributedIterator.__next__ calls in this thread: the tf.data
#: iterators they use inside are not recorded a second time.
_DIST_NEXT = threading.local()


def _local_batches(element):
    """A tf.distribute element with each PerReplica value replaced by this
    process's rows (its local replicas' batches, concatenated in order)."""
    if isinstance(element, dict):
        return {k: _local_batches(v) for k, v in element.items()}
    if isinstance(element, (tuple, list)):
        return type(element)(_local_batches(v) for v in element) if not hasattr(element, "_fields") \
            else type(element)(*(_local_batches(v) for v in element))
    if type(element).__name__ in TF_PER_REPLICA_CLASS_NAMES:
        import numpy as np

        parts = [np.asarray(v) for v in getattr(element, "values", ())]
        if len(parts) == 1:
            return parts[0]
        return np.concatenate(parts, axis=0) if parts and all(p.ndim for p in parts) else None
    return element


def _record_element(iterator, element) -> None:
    from tensorflow.python.eager import context  # noqa: PLC0415

    if not context.executing_eagerly():
        return  # traced inside a tf.function (Keras fit): symbolic
    if STATE.peeking:
        return  # Keras 3 fit peeking at a batch to build the model
    if isinstance(element, dict):
        items = list(element.values())
    elif isinstance(element, (tuple, list)):
        items = list(element)
    else:
        items = [element]
    if STATE.sample_rows >= STATE.sample_cap:
        STATE.sample_capped = True
        return
    key = getattr(iterator, "_tfdist_probe_iterator", None)
    if key is None:
        STATE.iterators += 1
        key = STATE.iterators
        try:
            iterator._tfdist_probe_iterator = key
        except Exception:  # noqa: BLE001
            pass
    STATE.fetch_seq += 1
    steps_before = step_counter()
    in_fit = STATE.keras_fit_depth > 0
    entry = record_batch("iterator", items, iterator=key, seq=STATE.fetch_seq, steps_before=steps_before,
                          in_fit=in_fit)
    if entry is not None and not in_fit:
        # The tape source leaves this step's batch to the iterator source.
        STATE.iterator_step_mark = steps_before


def as_array_struct(value):
    """The first array of a NumPy/eager-tensor structure (None: a dataset, generator, ...)."""
    if isinstance(value, dict):
        vals = list(value.values())
        return as_array_struct(vals[0]) if vals and all(as_array_struct(v) is not None for v in vals) else None
    if isinstance(value, (list, tuple)):
        return as_array_struct(value[0]) if value and all(as_array_struct(v) is not None for v in value) else None
    import numpy as np

    if isinstance(value, np.ndarray):
        return value if value.ndim else None
    eager = resolve(*TF_EAGER_TENSOR_CLASS)
    if eager is not None and isinstance(value, eager[2]):
        return value if len(value.shape) else None
    return None


def slice_struct(value, cut):
    if isinstance(value, dict):
        return {k: slice_struct(v, cut) for k, v in value.items()}
    if isinstance(value, (list, tuple)):
        return type(value)(slice_struct(v, cut) for v in value)
    return value[:cut]


def _finish_iterator_batches(final_counter: int) -> None:
    """Mark each eager iterator batch ``trained``: the step counter moved
    between its fetch and the next fetch (of any iterator) or the end.
    Tape batches likewise, up to the next batch of any source that noted the
    counter (iterator, tape, keras-fit), so that steps taken by a later
    tf.data loop or fit call never count for a tape without its own step."""
    batches = [b for b in STATE.sample_batches if b.get("source") == "iterator"]
    for cur, nxt in zip(batches, batches[1:] + [None]):
        after = nxt["steps_before"] if nxt is not None else final_counter
        if not cur.get("in_fit"):
            # a fit() begun after this fetch takes its steps on its own batches (a batch drawn to show
            # or to build the model before fit is not trained by them)
            starts = [steps for seq, steps in STATE.fit_starts if seq >= cur.get("seq", 0)]
            if starts:
                after = min(after, starts[0])
        cur["trained"] = after > cur["steps_before"]
    noted = [b for b in STATE.sample_batches if b.get("steps_before") is not None]
    for cur, nxt in zip(noted, noted[1:] + [None]):
        if cur.get("source") == "tape":
            after = nxt["steps_before"] if nxt is not None else final_counter
            cur["trained"] = after > cur["steps_before"]


def samples_record() -> dict:
    try:
        _finish_iterator_batches(step_counter())
    except Exception as exc:  # noqa: BLE001
        note_error("samples_finish", exc)
    sources = sorted({b["source"] for b in STATE.sample_batches})
    return {
        "hash": SAMPLE_HASH,
        "cap": STATE.sample_cap,
        "rows": STATE.sample_rows,
        "capped": STATE.sample_capped,
        "sources": sources,
        "batches": STATE.sample_batches,
        "values": STATE.sample_values,
        "skipped": list(STATE.sample_skipped),
    }
