"""Projects: trees of files, notebooks, cross-module facts, everyday modes.

``tfdist convert DIR -o OUT`` / ``--in-place`` / ``--diff`` / ``--check``
(see :mod:`tfdist.project.runner`); the engine converts one module at a
time, this package feeds it the facts of the modules around it.
"""
from __future__ import annotations

from ..options import Options
from .index import project_context_for_file
from .runner import run_convert

__all__ = ["project_context_for_file", "cli_convert_many"]


def cli_convert_many(args, options: Options) -> int:
    """``tfdist convert``'s paths and mode in ``args``, converted with ``options``."""
    return run_convert(args, options)
