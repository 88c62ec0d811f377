"""Keras 2 / tf-keras: optimizers, Model.save*, Model.__call__ and Model.fit
(``keras-fit`` samples, the step cap and the loss callback)."""
from __future__ import annotations

import os

from .files import make_file_wrapper
from .patch import install_patch
from .samples import as_array_struct, record_batch, slice_struct, step_counter
from .state import MAX_LOSS_POINTS, STATE, probe_busy, note_error, ProbeBusy
from .tables import KERAS_ITERATIONS_ATTR, KERAS_MODEL_CLASS, KERAS_OPTIMIZER_BASES, KERAS_SAVE_METHODS
from .variables import eager_value
from .tape import make_model_call_wrapper


def _multi_worker_model(model) -> bool:
    """The model trains under a tf.distribute strategy spanning several
    processes (its fit shards NumPy inputs itself)."""
    strategy = getattr(model, "distribute_strategy", None) if model is not None else None
    workers = getattr(getattr(strategy, "extended", None), "_num_workers", None)
    return isinstance(workers, int) and workers > 1


def _is_sequence(x) -> bool:
    """A Keras Sequence / PyDataset (an object indexed by batch, with a
    length), not an array or a dataset."""
    kind = type(x)
    return hasattr(kind, "__getitem__") and hasattr(kind, "__len__") and hasattr(kind, "on_epoch_end") \
        and as_array_struct(x) is None and not isinstance(x, (list, tuple, dict))


def _record_sequence_batches(x) -> None:
    """fit(sequence): the batches fit() reads from this very object are
    recorded as it reads them (``keras-sequence``). The object's class is
    swapped for a subclass of it whose ``__getitem__`` records: another
    instance of the class (a validation Sequence) records nothing."""
    kind = type(x)
    if getattr(kind, "_tfdist_records_batches", False):
        return

    def __getitem__(self, index):
        batch = kind.__getitem__(self, index)
        if STATE.pid == os.getpid() and not probe_busy():
            try:
                items = list(batch) if isinstance(batch, (tuple, list)) else [batch]
                record_batch("keras-sequence", items, index=int(index), steps_before=step_counter())
            except Exception as exc:  # noqa: BLE001
                note_error("sequence_samples", exc)
        return batch

    x.__class__ = type(kind.__name__, (kind,), {"__getitem__": __getitem__, "_tfdist_records_batches": True,
                                                "__module__": kind.__module__})


def _scalars_as_array(value):
    """Keras reads a (nested) list of numbers as one array (its lists-of-
    scalars adapter): ``fit(df.values.tolist(), labels.tolist())``. A list
    of arrays (one per input) is left as it is."""
    import numbers

    first = value
    while isinstance(first, (list, tuple)) and first:
        first = first[0]
    if not isinstance(value, (list, tuple)) or not value or not isinstance(first, numbers.Number):
        return value
    import numpy as np

    try:
        return np.asarray(value)
    except ValueError:  # ragged rows: not one array
        return value


def _record_fit(bound) -> None:
    args = bound.arguments
    x, y = _scalars_as_array(args.get("x")), _scalars_as_array(args.get("y"))
    if x is not None and _is_sequence(x):
        _record_sequence_batches(x)
        return
    if x is None or as_array_struct(x) is None:
        return
    if _multi_worker_model(args.get("self")):
        # MultiWorkerMirroredStrategy gives each worker its shard of the
        # arrays inside fit (auto-sharding): the rows fit is handed are not
        # the rows this worker trains on, so they are not recorded.
        note = "keras-fit: Model.fit on NumPy inputs under a multi-worker strategy (sharded inside fit)"
        if note not in STATE.sample_skipped:
            STATE.sample_skipped.append(note)
        return
    items = [x] + ([y] if y is not None and as_array_struct(y) is not None else [])
    epochs = int(args.get("epochs", 1) or 1) - int(args.get("initial_epoch", 0) or 0)
    split = float(args.get("validation_split", 0.0) or 0.0)
    if split:
        import math

        n = len(as_array_struct(x))
        cut = int(math.floor(n * (1.0 - split)))
        items = [slice_struct(v, cut) for v in items]
    STATE.fit_samples_calls += 1
    record_batch("keras-fit", items, fit=STATE.fit_samples_calls, steps_before=step_counter(),
                  epochs=max(0, epochs), validation_split=split, steps_per_epoch=args.get("steps_per_epoch"),
                  batch_size=args.get("batch_size"))


def rate_at_start(optimizer):
    """The learning rate ``optimizer`` trains its first step with: a
    schedule evaluated at step 0, a variable's value, a callable's result;
    None when it cannot be read. Keras 3 and Keras 2's optimizers keep a
    schedule in ``_learning_rate``, legacy ones behind ``learning_rate``; a
    loss-scale wrapper forwards to its ``inner_optimizer``."""
    inner = getattr(optimizer, "inner_optimizer", optimizer)
    rate = getattr(inner, "_learning_rate", None)
    if rate is None:
        rate = getattr(inner, "learning_rate", None)
    if rate is None:
        return None
    if any(c.__name__ == "LearningRateSchedule" for c in type(rate).__mro__):
        rate = rate(0)
    elif callable(rate) and not hasattr(rate, "assign"):
        rate = rate()
    value = rate.numpy() if hasattr(rate, "numpy") else rate
    return float(value)


def _iterations(optimizer):
    """Steps the optimizer took (0 before its step counter exists: legacy
    Keras optimizers make it at their first step)."""
    it = getattr(optimizer, KERAS_ITERATIONS_ATTR, None)
    return 0 if it is None else int(eager_value(it))


def _rates_before_fit() -> list:
    """(optimizer, its step count, the rate its first step trains with) of
    every Keras optimizer built so far, when a fit starts."""
    out = []
    for opt in list(STATE.keras_optimizers):
        try:
            out.append((opt, _iterations(opt), rate_at_start(opt)))
        except Exception:  # noqa: BLE001
            out.append((opt, None, None))
    return out


def _record_fit_rates(before: list) -> None:
    """The rates of the optimizers this fit stepped (model.optimizer, or the
    ones a custom train_step applies), in the order they were built."""
    stepped = []
    for opt, count, rate in before:
        try:
            after = _iterations(opt)
        except Exception:  # noqa: BLE001
            after = None
        if count is not None and after is not None and after > count:
            stepped.append(rate)
    STATE.fit_rates.append(stepped)


def install_keras_optimizer(module, group):
    cls_name = KERAS_OPTIMIZER_BASES[group]

    def make(orig):
        def __init__(self, *args, **kwargs):
            orig(self, *args, **kwargs)
            try:
                if id(self) not in STATE.keras_optimizer_ids:
                    with STATE.lock:
                        STATE.keras_optimizer_ids.add(id(self))
                        STATE.keras_optimizers.append(self)
            except Exception as exc:  # noqa: BLE001
                note_error("keras_optimizer_init", exc)
        return __init__

    install_patch(module.__name__, cls_name + ".__init__", make)


def install_keras_model(module, group):
    for method, spec in KERAS_SAVE_METHODS:
        install_patch(module.__name__, f"{KERAS_MODEL_CLASS}.{method}",
               make_file_wrapper(f"Model.{method}", spec, "model"))
    install_fit(module)
    install_patch(module.__name__, KERAS_MODEL_CLASS + ".__call__", make_model_call_wrapper)


def _step_cap_callback(model_module_name):
    """Build (once) a Keras callback class that stops ``fit`` gracefully after
    TFDIST_PROBE_MAX_STEPS optimizer steps.  Built lazily at the first fit so
    that the probe never imports Keras modules during Keras' own import."""
    cached = _CAP_CLASSES.get(model_module_name)
    if cached is not None:
        return cached
    callback_base = _callback_base(model_module_name)

    class _StepCap(callback_base):
        _supports_tf_logs = True

        def __init__(self, initial_epoch):
            super().__init__()
            self._initial_epoch = initial_epoch or 0
            self._per_call = 1

        def on_train_begin(self, logs=None):
            try:
                params = self.params or {}
                steps, epochs = params.get("steps"), params.get("epochs")
                if steps is None or epochs is None:
                    STATE.planned_unknown = True
                else:
                    STATE.planned_steps += int(steps) * max(0, int(epochs) - int(self._initial_epoch))
                spe = getattr(self.model, "_steps_per_execution", None)
                if spe is None:
                    spe = getattr(self.model, "steps_per_execution", None)   # Keras 3: an int
                if spe is not None:
                    self._per_call = max(1, int(spe.numpy()) if hasattr(spe, "numpy") else int(spe))
            except Exception as exc:  # noqa: BLE001
                note_error("fit_cap_begin", exc)

        def on_train_batch_end(self, batch, logs=None):
            STATE.cap_done += self._per_call
            if STATE.cap_done >= STATE.max_steps:
                STATE.cap_applied = True
                self.model.stop_training = True

    _CAP_CLASSES[model_module_name] = _StepCap
    return _StepCap


_CAP_CLASSES: dict = {}
_LOSS_CLASSES: dict = {}


def _callback_base(model_module_name):
    import importlib  # noqa: PLC0415

    if model_module_name.endswith(".callbacks"):
        callbacks_name = model_module_name          # given directly (Keras 3)
    else:
        callbacks_name = model_module_name.rsplit(".engine", 1)[0] + ".callbacks"
    return importlib.import_module(callbacks_name).Callback


def _plain_logs(logs) -> dict:
    out = {}
    for key, value in (logs or {}).items():
        try:
            out[str(key)] = float(value.numpy() if hasattr(value, "numpy") else value)
        except Exception:  # noqa: BLE001
            continue
    return out


def _parameter_servers(model) -> bool:
    """The model trains under a ParameterServerStrategy, whose fit refuses
    batch-level callbacks (its steps run on the workers, scheduled by a
    ClusterCoordinator)."""
    strategy = getattr(model, "distribute_strategy", None) if model is not None else None
    return any("ParameterServerStrategy" in c.__name__ for c in type(strategy).__mro__)


def _loss_callback(model_module_name, batches: bool = True):
    """A Keras callback class recording fit's logs (TFDIST_PROBE_LOSSES);
    without ``batches`` only the epochs' (ParameterServerStrategy)."""
    cached = _LOSS_CLASSES.get((model_module_name, batches))
    if cached is not None:
        return cached

    class _EpochLossRecorder(_callback_base(model_module_name)):
        def __init__(self, call):
            super().__init__()
            self._call = call
            self._epoch = 0

        def on_epoch_begin(self, epoch, logs=None):
            self._epoch = int(epoch)

        def on_epoch_end(self, epoch, logs=None):
            try:
                STATE.loss_epochs.append([self._call, int(epoch), _plain_logs(logs)])
            except Exception as exc:  # noqa: BLE001
                note_error("fit_loss_epoch", exc)

    class _LossRecorder(_EpochLossRecorder):
        def on_train_batch_end(self, batch, logs=None):
            try:
                with STATE.lock:
                    STATE.loss_batches.append([self._call, self._epoch, int(batch), _plain_logs(logs)])
                    if len(STATE.loss_batches) >= MAX_LOSS_POINTS:
                        STATE.loss_batches = STATE.loss_batches[::2]
            except Exception as exc:  # noqa: BLE001
                note_error("fit_loss_batch", exc)

    if not batches:   # Keras sees batch hooks by the methods a callback class overrides
        _LossRecorder = _EpochLossRecorder
    _LOSS_CLASSES[(model_module_name, batches)] = _LossRecorder
    return _LossRecorder


def install_fit(module, cls_name: str = KERAS_MODEL_CLASS, callbacks_module: str | None = None):
    """Wrap Model.fit: record the NumPy samples it is given (keras-fit source)
    and, with TFDIST_PROBE_MAX_STEPS, add the step-cap callback."""
    import inspect

    module_name = module.__name__
    cap_key = callbacks_module or module_name

    def make(orig):
        try:
            sig = inspect.signature(orig)
        except Exception:  # noqa: BLE001
            sig = None

        def fit(*args, **kwargs):
            bound = None
            if STATE.pid == os.getpid() and not probe_busy():
                try:
                    if sig is None:
                        raise RuntimeError("Model.fit has no signature")
                    bound = sig.bind(*args, **kwargs)
                except Exception as exc:  # noqa: BLE001
                    note_error("fit_bind", exc)
            if bound is not None:
                try:
                    _record_fit(bound)
                except Exception as exc:  # noqa: BLE001
                    note_error("fit_samples", exc)
            if bound is not None and STATE.record_losses:
                try:
                    cbs = bound.arguments.get("callbacks")
                    cbs = list(cbs) if cbs else []
                    batches = not _parameter_servers(bound.arguments.get("self"))
                    cbs.append(_loss_callback(cap_key, batches)(STATE.fit_loss_calls))
                    STATE.fit_loss_calls += 1
                    bound.arguments["callbacks"] = cbs
                    args, kwargs = bound.args, bound.kwargs
                except Exception as exc:  # noqa: BLE001
                    note_error("fit_losses", exc)
            if bound is not None and STATE.max_steps is not None:
                try:
                    cap_cls = _step_cap_callback(cap_key)
                    cbs = bound.arguments.get("callbacks")
                    cbs = list(cbs) if cbs else []
                    cbs.append(cap_cls(bound.arguments.get("initial_epoch", 0)))
                    bound.arguments["callbacks"] = cbs
                    STATE.fit_calls += 1
                    args, kwargs = bound.args, bound.kwargs
                except Exception as exc:  # noqa: BLE001
                    note_error("fit_cap", exc)
            before = None
            if bound is not None:
                try:
                    with ProbeBusy():
                        before = _rates_before_fit()
                except Exception as exc:  # noqa: BLE001
                    note_error("fit_rate", exc)
            if STATE.keras_fit_depth == 0:
                try:  # where fit's own steps begin: an eager batch fetched before it is not trained by them
                    STATE.fit_starts.append((STATE.fetch_seq, step_counter()))
                except Exception as exc:  # noqa: BLE001
                    note_error("fit_start", exc)
            STATE.keras_fit_depth += 1
            try:
                result = orig(*args, **kwargs)
            finally:
                STATE.keras_fit_depth -= 1
            if before is not None:
                try:
                    with ProbeBusy():
                        _record_fit_rates(before)
                except Exception as exc:  # noqa: BLE001
                    note_error("fit_rate", exc)
            return result
        return fit

    install_patch(module_name, cls_name + ".fit", make)
