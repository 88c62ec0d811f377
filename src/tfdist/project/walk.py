"""Finding the files of a tree: what is converted, copied, or skipped.

Policy (also in ``tfdist convert --help``):

* Skipped folders (never entered, never copied): hidden folders (``.git``,
  ``.venv``...), virtual environments (a folder holding ``pyvenv.cfg``, or
  named ``venv`` / ``env``), ``site-packages`` / ``dist-packages``,
  ``__pycache__``, ``node_modules``, and the output folder itself when it
  lies inside the tree.
* Symbolic links: a link to a *file* is followed (its target's content is
  read; with ``-o`` the mirror gets a regular file). In ``--in-place`` mode
  a link is never replaced: it is reported and left alone (convert its
  target instead). A link to a *folder* is not entered, so a tree can never
  loop or escape through links. A broken link is a per-file error.
* Temporary files of an interrupted ``--in-place`` run (``.tfdist-*.tmp``)
  are skipped.
"""
from __future__ import annotations

import os
from dataclasses import dataclass
from typing import Iterator, List, Optional, Sequence

SKIP_DIR_NAMES = frozenset({"__pycache__", "node_modules", "site-packages", "dist-packages", "venv", "env"})
CONVERTIBLE = (".py", ".ipynb")
TEMP_PREFIX = ".tfdist-"


@dataclass
class Entry:
    """One file found under an input path."""

    path: str  # as the user would write it (input path joined with rel)
    rel: str  # relative to the input root, "/"-separated
    root: str  # the input root directory (absolute)
    kind: str  # "py", "ipynb" or "other"
    symlink: bool = False
    broken: bool = False  # a symlink whose target does not exist

    @property
    def abspath(self) -> str:
        return os.path.join(self.root, *self.rel.split("/"))


def kind_of(name: str) -> str:
    if name.endswith(".py"):
        return "py"
    if name.endswith(".ipynb"):
        return "ipynb"
    return "other"


def skip_dir(name: str, full: str) -> Optional[str]:
    """Why a folder is skipped, or None."""
    if name.startswith("."):
        return "hidden folder"
    if name in SKIP_DIR_NAMES:
        return "virtual environment or package cache" if name not in ("__pycache__", "node_modules") else name
    if os.path.isfile(os.path.join(full, "pyvenv.cfg")):
        return "virtual environment (pyvenv.cfg)"
    return None


def walk(root: str, display: str, exclude: Sequence[str] = ()) -> Iterator[Entry]:
    """Files under root in a stable (sorted) order, with the skip policy applied.

    exclude: absolute real paths of folders never to enter (the output folder).
    """
    root = os.path.abspath(root)
    excluded = {os.path.realpath(e) for e in exclude}

    def rec(directory: str, rel_parts: List[str]) -> Iterator[Entry]:
        try:
            with os.scandir(directory) as it:
                entries = sorted(it, key=lambda e: e.name)
        except OSError:
            return
        files, dirs = [], []
        for e in entries:
            try:
                is_link = e.is_symlink()
                if e.is_dir(follow_symlinks=False):
                    dirs.append(e)
                elif is_link:
                    if os.path.isdir(e.path):
                        continue  # a link to a folder: not entered (no loops, no escapes)
                    files.append((e, True, not os.path.exists(e.path)))
                elif e.is_file(follow_symlinks=False):
                    files.append((e, False, False))
            except OSError:
                continue
        for e, link, broken in files:
            if e.name.startswith(TEMP_PREFIX) and e.name.endswith(".tmp"):
                continue
            rel = "/".join([*rel_parts, e.name])
            yield Entry(path=_join(display, rel), rel=rel, root=root, kind=kind_of(e.name), symlink=link, broken=broken)
        for d in dirs:
            if skip_dir(d.name, d.path) or os.path.realpath(d.path) in excluded:
                continue
            yield from rec(d.path, [*rel_parts, d.name])

    if os.path.realpath(root) in excluded:
        return
    yield from rec(root, [])


def _join(display: str, rel: str) -> str:
    if display in ("", "."):
        return rel
    return display.rstrip("/\\") + "/" + rel
