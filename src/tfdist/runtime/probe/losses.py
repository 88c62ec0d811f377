"""Training losses (TFDIST_PROBE_LOSSES=1): the values recorded per step, and
the ``tape.gradient`` targets read from outside the script."""
from __future__ import annotations

from .state import MAX_LOSS_POINTS, STATE


def record_loss_values(values) -> None:
    """One training step's losses (tape targets, TF1 losses), in order."""
    import numpy as np  # noqa: PLC0415

    for value in values if isinstance(values, (list, tuple)) else [values]:
        arr = np.asarray(value, dtype=np.float64)
        _append_loss(float(arr.mean()) if arr.size else float("nan"))


def _append_loss(value: float) -> None:
    with STATE.lock:
        seq = STATE.loss_seen
        STATE.loss_seen += 1
        if seq % STATE.loss_stride:
            return
        STATE.loss_steps.append((seq, value))
        if len(STATE.loss_steps) >= MAX_LOSS_POINTS:
            STATE.loss_stride *= 2
            STATE.loss_steps = [(q, v) for q, v in STATE.loss_steps if q % STATE.loss_stride == 0]


def _replicas_dividing_the_loss() -> int:
    """Replicas in sync when called in a tf.distribute replica context (the
    loss there is divided by them), else 1."""
    import tensorflow as tf  # noqa: PLC0415

    if not tf.distribute.has_strategy() or tf.distribute.in_cross_replica_context():
        return 1
    ctx = tf.distribute.get_replica_context()
    return int(getattr(ctx, "num_replicas_in_sync", 1) or 1)


def _records_this_replica() -> bool:
    """One loss per step and process: with several local devices
    (--local-devices) only the process's first replica records its loss, as
    each worker of a cluster records its own."""
    if STATE.local_devices <= 1:
        return True
    import tensorflow as tf  # noqa: PLC0415

    if not tf.distribute.has_strategy() or tf.distribute.in_cross_replica_context():
        return True
    replica = tf.get_static_value(tf.distribute.get_replica_context().replica_id_in_sync_group)
    return replica is None or int(replica) % STATE.local_devices == 0


def record_gradient_target(target, grads):
    """Record the value of a tape.gradient target (the loss): directly when
    eager; inside a tf.function through a py_function the returned gradients
    depend on, so it runs at every execution of the step."""
    import tensorflow as tf  # noqa: PLC0415

    if not tf.is_tensor(target) or not _records_this_replica():
        return grads
    scale = _replicas_dividing_the_loss()
    if tf.executing_eagerly():
        record_loss_values(target.numpy() * scale)
        return grads
    value = tf.reduce_mean(tf.cast(target, tf.float32)) * float(scale)

    def note(v):
        _append_loss(float(v.numpy()))
        return v

    recorded = tf.py_function(note, [value], tf.float32)
    flat = tf.nest.flatten(grads)
    if not any(isinstance(g, tf.Tensor) for g in flat):
        return grads
    with tf.control_dependencies([recorded]):
        flat = [tf.identity(g) if isinstance(g, tf.Tensor) else g for g in flat]
    return tf.nest.pack_sequence_as(grads, flat)
