"""Public Python API."""
from __future__ import annotations

import os
from typing import Optional, Union

from .assembly import convert_path
from .engine.analysis import ProjectContext
from .engine.findings import FileResult
from .options import Options, OptionsOrName
from .project import project_context_for_file

__all__ = ["convert_file", "convert_source", "FileResult", "Options", "ProjectContext"]


def convert_source(source: Union[str, bytes], path: str = "<string>", backend: OptionsOrName = "horovod",
                   project: Optional[ProjectContext] = None) -> FileResult:
    """Convert ``source``; when ``path`` names a file on disk, the modules
    next to it inform the conversion as they do for convert_file.

    ``backend``: an :class:`~tfdist.options.Options`, or a backend name
    (``"horovod"``, ``"tf-distribute"``, or ``"auto"``: chosen from the
    source, see :mod:`tfdist.engine_choice`) for its default options."""
    data = source.encode("utf-8") if isinstance(source, str) else source
    if project is None and os.path.isfile(path):
        project = _sibling_project(path)
    return convert_path(path, Options.of(backend), project, data=data)


def convert_file(path: Union[str, os.PathLike], backend: OptionsOrName = "horovod",
                 project: Optional[ProjectContext] = None) -> FileResult:
    path = os.fspath(path)
    if project is None:
        project = _sibling_project(path)
    return convert_path(path, Options.of(backend), project)


def _sibling_project(path: str) -> Optional[ProjectContext]:
    """Cross-module facts from the file's siblings."""
    try:
        return project_context_for_file(path)
    except Exception:  # a broken sibling must never stop converting this file
        return None
