"""Converting one module by backend name or with a given :class:`Pipeline`.

The pipeline itself is :mod:`tfdist.engine.pipeline`; the pipelines named
by backend name are registered by the composition root,
:mod:`tfdist.assembly`, which every caller imports (tfdist.api, the CLI,
the project worker and the notebook converter): the engine imports none of it.
"""
from __future__ import annotations

from typing import Optional, Sequence, Union

from . import findings as F
from .analysis import ProjectContext
from .pipeline import NO_TRAINING_MESSAGE, Pipeline, resolve
from .source import SourceFile

__all__ = ["NO_TRAINING_MESSAGE", "Pipeline", "analyse", "convert", "convert_path"]

PipelineOrName = Union[str, Pipeline]

def _pipeline(backend: PipelineOrName) -> Pipeline:
    return resolve(backend)


def analyse(src: SourceFile, project: Optional[ProjectContext], backend: PipelineOrName):
    return _pipeline(backend).analyse(src, project)


def convert(src: SourceFile, backend: PipelineOrName, project: Optional[ProjectContext] = None) -> F.FileResult:
    return _pipeline(backend).convert(src, project)


def convert_path(path: str, backend: PipelineOrName, project: Optional[ProjectContext] = None,
                 data: Optional[bytes] = None, boundaries: Sequence[int] = ()) -> F.FileResult:
    try:
        pipeline = _pipeline(backend)
    except ValueError as e:  # an unknown backend fails this file, it does not raise
        return F.FileResult(path=path, status=F.FAILED, error=f"internal error: ValueError: {e} (please report); nothing written")
    return pipeline.convert_path(path, project, data, boundaries)
