"""The composition root: builds the conversion pipelines from the rules and
the backends, one per :class:`~tfdist.options.Options`.

The engine (``tfdist.engine``) is handed its rules and its backend and
imports neither; this module is the one place that knows all three. The
engine caches the pipelines per Options (frozen, hashable): this module
hands it the factory.
"""
from __future__ import annotations

from typing import Optional, Sequence, Tuple

from . import rules
from .backends import BACKENDS
from .engine import convert as engine_convert
from .engine import findings as F
from .engine import pipeline as engine_pipeline
from .engine.analysis import ProjectContext
from .engine.pipeline import Pipeline
from .engine.source import SourceFile
from .engine_choice import Choice, choose_engine
from .options import HOROVOD, PARAMETER_SERVER, TF_DISTRIBUTE, Options, OptionsOrName

#: The engine of a bare call (tfdist.api.convert_source(src), analyse(src)):
#: Horovod, as it always was for the Python API; the command line's default is
#: ``auto`` (tfdist.engine_choice).
DEFAULT_BACKEND = HOROVOD


def build_pipeline(options: OptionsOrName = DEFAULT_BACKEND) -> Pipeline:
    """The pipeline of one engine: the default rules, emitting through this
    backend, built with these options."""
    options = Options.of(options)
    if not options.chosen:
        raise ValueError("--backend auto is chosen per file (tfdist.engine_choice.choose_engine): "
                         "resolve it before building a pipeline")
    kwargs = options.backend_kwargs()
    try:
        backend = BACKENDS[options.engine](**kwargs)
    except TypeError:
        raise ValueError(f"backend {options.engine!r} takes no option {', '.join(sorted(kwargs))}") from None
    if options.engine == PARAMETER_SERVER:  # tf-distribute --strategy parameter-server: rules of its own
        return Pipeline(rules.PARAMETER_SERVER_RULES, backend)
    # An engine that creates variables in a replication scope (tf.distribute)
    # needs the rules that put state there and run steps on every replica.
    replicated = getattr(backend, "replica_scope", None) is not None
    return Pipeline(rules.REPLICATED_RULES if replicated else rules.DEFAULT_RULES, backend)


engine_pipeline.set_factory(build_pipeline)


def resolve_options(options: OptionsOrName, source: Optional[bytes]) -> Tuple[Options, Optional[Choice]]:
    """The options with the engine chosen: ``auto`` is decided for this
    source (the Choice says which and why); a given engine is kept (Choice None)."""
    options = Options.of(options)
    if options.chosen:
        return options, None
    if options.fault_tolerant:
        choice = Choice(TF_DISTRIBUTE, "--fault-tolerant is an option of tf-distribute (Keras BackupAndRestore)")
    elif options.strategy == PARAMETER_SERVER:
        choice = Choice(TF_DISTRIBUTE, "--strategy parameter-server is tf.distribute's ParameterServerStrategy")
    else:
        choice = choose_engine(source or b"")
    return options.with_backend(choice.backend), choice


def pipeline(options: OptionsOrName = DEFAULT_BACKEND) -> Pipeline:
    """The (shared) pipeline of these options (or of a backend name)."""
    return engine_pipeline.resolve(Options.of(options))


def analyse(src: SourceFile, project: Optional[ProjectContext] = None, backend: OptionsOrName = DEFAULT_BACKEND):
    options, _ = resolve_options(backend, src.data)
    return pipeline(options).analyse(src, project)


def convert_path(path: str, backend: OptionsOrName = DEFAULT_BACKEND, project: Optional[ProjectContext] = None,
                 data: Optional[bytes] = None, boundaries: Sequence[int] = ()) -> F.FileResult:
    """Convert one module with these options; ``auto`` is decided from ``data``
    (or the file's bytes)."""
    options = Options.of(backend)
    if not options.chosen:
        if data is None:
            try:
                with open(path, "rb") as f:
                    data = f.read()
            except OSError:
                data = None  # the conversion reports it
        options, _ = resolve_options(options, data)
    return engine_convert.convert_path(path, options, project, data, boundaries)
