"""Converting one module with a given :class:`Pipeline` or its key (its options).

The pipeline itself is :mod:`tfdist.engine.pipeline`; pipelines are built
from their options by the factory the composition root,
:mod:`tfdist.assembly`, sets; every caller imports it (tfdist.api, the CLI,
the project worker and the notebook converter): the engine imports none of it.
"""
from __future__ import annotations

from typing import Hashable, Optional, Sequence, Union

from . import findings as F
from .analysis import ProjectContext
from .pipeline import NO_TRAINING_MESSAGE, Pipeline, resolve
from .source import SourceFile

__all__ = ["NO_TRAINING_MESSAGE", "Pipeline", "analyse", "convert", "convert_path"]

PipelineOrKey = Union[Hashable, Pipeline]


def analyse(src: SourceFile, project: Optional[ProjectContext], backend: PipelineOrKey):
    return resolve(backend).analyse(src, project)


def convert(src: SourceFile, backend: PipelineOrKey, project: Optional[ProjectContext] = None) -> F.FileResult:
    return resolve(backend).convert(src, project)


def convert_path(path: str, backend: PipelineOrKey, project: Optional[ProjectContext] = None,
                 data: Optional[bytes] = None, boundaries: Sequence[int] = ()) -> F.FileResult:
    try:
        pipeline = resolve(backend)
    except ValueError as e:  # an unknown backend fails this file, it does not raise
        return F.FileResult(path=path, status=F.FAILED, error=f"internal error: ValueError: {e} (please report); nothing written")
    return pipeline.convert_path(path, project, data, boundaries)
