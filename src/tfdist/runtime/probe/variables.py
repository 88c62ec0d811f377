"""Variables: every ``tf.Variable`` created, and the local value of
Keras 3 and tf.distribute variables."""
from __future__ import annotations

from .patch import install_patch, resolve
from .state import STATE, note_error
from .tables import (KERAS3_VARIABLE_VALUE_ATTR, TF_DISTRIBUTED_VARIABLE_CLASS, TF_INTERNAL_VARIABLE_CREATORS,
                     TF_VARIABLE_ALIAS_CLASS_NAMES, TF_VARIABLE_METACLASS, TF_VARIABLE_STORAGE_CLASSES)


def install_variable_tracking():
    storage = []
    for module_name, cls_name in TF_VARIABLE_STORAGE_CLASSES:
        found = resolve(module_name, cls_name)
        if found is not None and isinstance(found[2], type):
            storage.append(found[2])
    STATE.storage_classes = tuple(storage)
    if not storage:
        note_error("variables", RuntimeError("no TF variable classes found"))
        return

    found = resolve(*TF_DISTRIBUTED_VARIABLE_CLASS)
    STATE.distributed_var_class = found[2] if found is not None and isinstance(found[2], type) else None

    def make(orig):
        def __call__(cls, *args, **kwargs):
            var = orig(cls, *args, **kwargs)
            try:
                if getattr(STATE.internal, "depth", 0):
                    pass
                elif STATE.distributed_var_class is not None and isinstance(var, STATE.distributed_var_class):
                    _track_distributed_variable(var)
                elif (isinstance(var, STATE.storage_classes)
                        and type(var).__name__ not in TF_VARIABLE_ALIAS_CLASS_NAMES
                        and id(var) not in STATE.variable_ids):
                    with STATE.lock:
                        STATE.variable_ids.add(id(var))
                        STATE.variables.append(var)
            except Exception as exc:  # noqa: BLE001
                note_error("variable_created", exc)
            return var
        return __call__

    module_name, cls_name = TF_VARIABLE_METACLASS
    install_patch(module_name, cls_name + ".__call__", make)

    def make_internal(orig):
        def internal(*args, **kwargs):
            STATE.internal.depth = getattr(STATE.internal, "depth", 0) + 1
            try:
                return orig(*args, **kwargs)
            finally:
                STATE.internal.depth -= 1
        return internal

    for module_name, qualname in TF_INTERNAL_VARIABLE_CREATORS:
        install_patch(module_name, qualname, make_internal)


def _track_distributed_variable(var) -> None:
    """Record a tf.distribute variable once, in place of its per-device
    components (created - and recorded - just before it)."""
    components = list(getattr(var, "_values", None) or getattr(var, "values", None) or ())
    ids = {id(c) for c in components}
    with STATE.lock:
        STATE.component_ids.update(ids)
        if ids & STATE.variable_ids:
            STATE.variables[:] = [v for v in STATE.variables if id(v) not in ids]
            STATE.variable_ids.difference_update(ids)
        if id(var) not in STATE.variable_ids:
            STATE.variable_ids.add(id(var))
            STATE.variables.append(var)


def _local_variable(var):
    """The tf.Variable whose value this process holds: a Keras 3 variable's
    backing variable, a tf.distribute variable's primary (local) copy."""
    if type(var).__module__.startswith("keras.") and hasattr(var, KERAS3_VARIABLE_VALUE_ATTR):
        inner = getattr(var, KERAS3_VARIABLE_VALUE_ATTR)
        if inner is not None:
            var = inner
    if STATE.distributed_var_class is not None and isinstance(var, STATE.distributed_var_class):
        primary = getattr(var, "_primary", None)
        if primary is None:
            values = getattr(var, "_values", None) or ()
            primary = values[0] if values else None
        if primary is not None:
            var = primary
    return var


def is_graph_variable(var) -> bool:
    var = _local_variable(var)
    in_graph = getattr(var, "_in_graph_mode", None)
    if in_graph is None:
        return True  # RefVariable & co are graph-only
    return bool(in_graph)


def is_float_variable(var) -> bool:
    """Trainable-in-practice: counters (int64 ``tf.Variable(0)``) are created
    with trainable=True by default but are never trained."""
    try:
        dtype = var.dtype.base_dtype
        return bool(dtype.is_floating or dtype.is_complex)
    except Exception:  # noqa: BLE001
        return True


def graph_fetch(var):
    elem = getattr(var, "_graph_element", None)
    if elem is not None:
        return elem
    inner = getattr(var, "_variable", None)
    return inner if inner is not None else var


def eager_value(var):
    return _local_variable(var).numpy()
