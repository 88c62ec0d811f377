"""The composition root: builds the conversion pipelines from the rules and
the backends, and registers them by backend name.

The engine (``tfdist.engine``) is handed its rules and its backend and
imports neither; this module is the one place that knows all three.
"""
from __future__ import annotations

from typing import Optional, Sequence

from . import rules
from .backends import BACKENDS
from .engine import findings as F
from .engine import convert as _convert
from .engine import pipeline as _pipeline
from .engine.analysis import ProjectContext
from .engine.pipeline import Pipeline
from .engine.source import SourceFile

DEFAULT_BACKEND = "horovod"


#: Conversion options a backend can take, by the name a pipeline key gives
#: them (``tf-distribute+fault-tolerant``) -> the backend's keyword argument.
OPTIONS = {"fault-tolerant": ("fault_tolerant", True),
           "lr-sqrt": ("lr_scaling", "sqrt"), "lr-none": ("lr_scaling", "none")}
#: Options with a value: ``warmup-K`` (--warmup-epochs K, K >= 1) and
#: ``steps-S`` (--steps-per-epoch S, S >= 1).
VALUE_OPTIONS = {"warmup-": "warmup_epochs", "steps-": "steps_per_epoch"}


def _option(name: str, option: str):
    """(keyword, value) of one option of a pipeline key; ValueError if unknown."""
    if option in OPTIONS:
        return OPTIONS[option]
    for prefix, keyword in VALUE_OPTIONS.items():
        if option.startswith(prefix):
            value = option[len(prefix):]
            if not (value.isdigit() and int(value) >= 1 and str(int(value)) == value):
                raise ValueError(f"{option!r}: {keyword} needs a whole number >= 1 ({prefix}2)")
            return keyword, int(value)
    raise ValueError(f"unknown option {option!r} for backend {name!r}")


def pipeline_key(backend: str, *options: str) -> str:
    """The registered name of a backend's pipeline with these options."""
    return "+".join([backend, *sorted(options)])


def build_pipeline(backend: str = DEFAULT_BACKEND) -> Pipeline:
    """The pipeline of one engine: the default rules, emitting through this
    backend (``name+option...`` configures the backend with options)."""
    name, *options = backend.split("+")
    try:
        cls = BACKENDS[name]
    except KeyError:
        raise ValueError(f"unknown backend {name!r} (available: {', '.join(sorted(BACKENDS))})") from None
    kwargs = {}
    for option in options:
        key, value = _option(name, option)
        if key in kwargs:
            raise ValueError(f"backend {name!r}: two values for one option ({backend})")
        kwargs[key] = value
    try:
        backend_ = cls(**kwargs)
    except TypeError:
        raise ValueError(f"backend {name!r} takes no option {', '.join(options)}") from None
    # An engine that creates variables in a replication scope (tf.distribute)
    # needs the rules that put state there and run steps on every replica.
    replicated = getattr(backend_, "replica_scope", None) is not None
    return Pipeline(rules.REPLICATED_RULES if replicated else rules.DEFAULT_RULES, backend_)


for _name in BACKENDS:
    _pipeline.register(_name, lambda _name=_name: build_pipeline(_name))
# Every backend with every combination of options, by key.
_OPTION_SETS = [(), ("lr-sqrt",), ("lr-none",)]
for _name in BACKENDS:
    for _policy in _OPTION_SETS:
        for _extra in ((), ("fault-tolerant",)) if _name == "tf-distribute" else ((),):
            _key = pipeline_key(_name, *_policy, *_extra)
            if _key != _name:
                _pipeline.register(_key, lambda _key=_key: build_pipeline(_key))


def _on_demand(key: str):
    """Any other key of a known backend (``horovod+lr-sqrt+warmup-3``) is built
    when first asked for; build_pipeline says what is wrong with a bad one."""
    if key.split("+")[0] in BACKENDS and "+" in key:
        return lambda: build_pipeline(key)
    return None


_pipeline.register_fallback(_on_demand)


def pipeline(backend: str = DEFAULT_BACKEND) -> Pipeline:
    """The (shared) pipeline registered for this backend name."""
    return _pipeline.resolve(backend)


def analyse(src: SourceFile, project: Optional[ProjectContext] = None, backend: str = DEFAULT_BACKEND):
    return pipeline(backend).analyse(src, project)


def convert_path(path: str, backend: str = DEFAULT_BACKEND, project: Optional[ProjectContext] = None,
                 data: Optional[bytes] = None, boundaries: Sequence[int] = ()) -> F.FileResult:
    return _convert.convert_path(path, backend, project, data, boundaries)
