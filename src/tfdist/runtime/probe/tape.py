"""Eager GradientTape loops: the ``tape`` sample source (the model's input and
the Keras loss's ``y_true`` inside a recording tape) and the loss targets."""
from __future__ import annotations

import os
import threading

from .losses import record_gradient_target
from .patch import install_patch, replace_aliases
from .samples import as_array_struct, is_plain_list, record_batch, step_counter
from .state import STATE, probe_busy, note_error
from .tables import (KERAS_ALIAS_PREFIXES, KERAS_ALIAS_ROOTS, KERAS_LOSS_CLASS, KERAS_LOSS_FUNCTION_PARAMS,
                     TF_GRADIENT_TAPE_CLASS)


# Eager GradientTape loops ("tape" source).  One context per outermost
# recording tape of a thread: {"model_seen", "sample", "steps_before",
# "labels_seen", "recorded"}.

_TAPES = threading.local()


def _tape_entered(tape) -> None:
    depth = getattr(_TAPES, "depth", 0)
    _TAPES.depth = depth + 1
    if depth:
        return                      # nested tape: same step as the outer one
    _TAPES.ctx = None
    if STATE.pid != os.getpid() or probe_busy() or STATE.keras_fit_depth > 0:
        return
    from tensorflow.python.eager import context  # noqa: PLC0415

    if not context.executing_eagerly():
        return                      # traced inside a tf.function: symbolic
    _TAPES.ctx = {"model_seen": False, "sample": None, "steps_before": None, "labels_seen": False,
                  "recorded": False}


def _tape_exited(tape) -> None:
    depth = getattr(_TAPES, "depth", 0)
    if depth <= 0:
        return
    _TAPES.depth = depth - 1
    if depth > 1:
        return
    ctx = getattr(_TAPES, "ctx", None)
    _TAPES.ctx = None
    if ctx is not None and ctx["sample"] is not None and not ctx["recorded"]:
        _record_tape_batch(ctx, None)   # no Keras loss saw labels: the samples alone


def _tape_model_input(ctx, args, kwargs) -> None:
    """First Keras model call in a recording tape: its input is the sample batch."""
    ctx["model_seen"] = True
    if STATE.pid != os.getpid() or probe_busy() or STATE.keras_fit_depth > 0:
        return
    from tensorflow.python.eager import context  # noqa: PLC0415

    if not context.executing_eagerly():
        return
    inputs = args[0] if args else kwargs.get("inputs")
    if inputs is None or not _has_rows(inputs):
        return                      # symbolic or scalar input: nothing to record
    steps_before = step_counter()
    if STATE.iterator_step_mark == steps_before:
        return                      # a tf.data batch fetched for this step was recorded already
    ctx["sample"] = inputs
    ctx["steps_before"] = steps_before


def _has_rows(value) -> bool:
    """NumPy arrays / eager tensors with a leading dimension (or a structure of
    them), or a literal batch; checked before hashing anything."""
    if as_array_struct(value) is not None:
        return True
    return isinstance(value, (list, tuple)) and bool(value) and is_plain_list(value)


def _tape_labels(ctx, y_true) -> None:
    """First Keras loss call after the sample batch, same tape: y_true are its labels."""
    ctx["labels_seen"] = True
    if y_true is None or not _has_rows(y_true):
        return                      # recorded without labels when the tape exits
    _record_tape_batch(ctx, y_true)


def _record_tape_batch(ctx, labels) -> None:
    ctx["recorded"] = True
    items = [ctx["sample"]] + ([labels] if labels is not None else [])
    STATE.tape_batches += 1
    entry = record_batch("tape", items, seq=STATE.tape_batches, steps_before=ctx["steps_before"])
    if entry is not None:           # labels of another leading dimension are left out
        entry["labeled"] = bool(entry["rows"]) and ":" in entry["rows"][0]
    ctx["sample"] = None            # drop the reference to the user's array


def _current_tape_ctx():
    ctx = getattr(_TAPES, "ctx", None)
    if ctx is None or STATE.pid != os.getpid():
        return None
    return ctx


def install_tape_hooks():
    def make_enter(orig):
        def __enter__(self):
            result = orig(self)
            try:
                _tape_entered(self)
            except Exception as exc:  # noqa: BLE001
                note_error("tape_enter", exc)
            return result
        return __enter__

    def make_exit(orig):
        def __exit__(self, typ, value, traceback):
            try:
                return orig(self, typ, value, traceback)
            finally:
                try:
                    _tape_exited(self)
                except Exception as exc:  # noqa: BLE001
                    note_error("tape_exit", exc)
        return __exit__

    def make_gradient(orig):
        def gradient(self, target, *args, **kwargs):
            grads = orig(self, target, *args, **kwargs)
            if STATE.keras_fit_depth == 0 and not probe_busy() and STATE.pid == os.getpid() and getattr(_TAPES, "depth", 0) == 0:
                from tensorflow.python.eager import context  # noqa: PLC0415

                if context.executing_eagerly():
                    STATE.eager_tape_gradients += 1
            if STATE.record_losses and STATE.keras_fit_depth == 0 and not probe_busy() and STATE.pid == os.getpid():
                try:
                    grads = record_gradient_target(target, grads)
                except Exception as exc:  # noqa: BLE001
                    note_error("tape_gradient_loss", exc)
            return grads
        return gradient

    mod, cls = TF_GRADIENT_TAPE_CLASS
    install_patch(mod, cls + ".__enter__", make_enter)
    install_patch(mod, cls + ".__exit__", make_exit)
    install_patch(mod, cls + ".gradient", make_gradient)


def make_model_call_wrapper(orig):
    def __call__(self, *args, **kwargs):
        ctx = _current_tape_ctx()
        if ctx is not None and not ctx["model_seen"]:
            try:
                _tape_model_input(ctx, args, kwargs)
            except Exception as exc:  # noqa: BLE001
                ctx["model_seen"] = True
                note_error("tape_model_call", exc)
        return orig(self, *args, **kwargs)
    return __call__


def _labels_hook(ctx, args, kwargs, first_positional: int) -> None:
    if ctx["sample"] is None or ctx["labels_seen"]:
        return
    try:
        y_true = args[first_positional] if len(args) > first_positional else kwargs.get("y_true")
        _tape_labels(ctx, y_true)
    except Exception as exc:  # noqa: BLE001
        ctx["labels_seen"] = True
        note_error("tape_loss_call", exc)


def _make_loss_call_wrapper(orig):
    def __call__(self, *args, **kwargs):          # Loss.__call__(self, y_true, y_pred, sample_weight=None)
        ctx = _current_tape_ctx()
        if ctx is not None:
            _labels_hook(ctx, args, kwargs, 0)
        return orig(self, *args, **kwargs)
    return __call__


def _make_loss_function_wrapper(orig):
    def loss_function(*args, **kwargs):           # keras.losses.<fn>(y_true, y_pred, ...)
        ctx = _current_tape_ctx()
        if ctx is not None:
            _labels_hook(ctx, args, kwargs, 0)
        return orig(*args, **kwargs)
    return loss_function


def install_keras_losses(module, group):
    import inspect

    install_patch(module.__name__, KERAS_LOSS_CLASS + ".__call__", _make_loss_call_wrapper)
    loss_base = getattr(module, KERAS_LOSS_CLASS, None)
    for name, value in list(vars(module).items()):
        if name.startswith("_") or isinstance(value, type) or not callable(value):
            continue
        if getattr(value, "_tfdist_probe", False):
            continue
        try:
            params = list(inspect.signature(value).parameters)
        except (TypeError, ValueError):
            continue
        if tuple(params[:2]) != KERAS_LOSS_FUNCTION_PARAMS:
            continue
        if loss_base is not None and isinstance(value, loss_base):
            continue
        if install_patch(module.__name__, name, _make_loss_function_wrapper):
            wrapper = getattr(module, name)
            if wrapper is not value:
                _replace_keras_aliases(value, wrapper)


def _replace_keras_aliases(orig, wrapper) -> None:
    """Keras API modules already imported that re-export ``orig``."""
    replace_aliases(orig, wrapper, lambda name: name in KERAS_ALIAS_ROOTS or name.startswith(KERAS_ALIAS_PREFIXES))
