"""Converting one file and writing its output: the unit of work of a tree.

Runs in worker processes. A task is a small :class:`FileTask`; the answer
is a small :class:`FileAnswer` (status, report entry, human lines, diff
text): converted code never travels back to the parent unless it must go
to stdout. Both are frozen dataclasses defined at module level, so
multiprocessing pickles them.
"""
from __future__ import annotations

import difflib
import io
import os
import tempfile
import tokenize
from dataclasses import dataclass
from typing import TYPE_CHECKING, List, Optional

from ..assembly import convert_path, resolve_options
from ..engine import findings as F
from ..engine_choice import Choice
from ..options import Options
from .notebook import convert_notebook, notebook_script

if TYPE_CHECKING:  # pragma: no cover
    from ..engine.analysis import ProjectContext

NO_LOOP = "no training loop found"
HELPER_NOTE = "imports TensorFlow/Keras but has no training loop (a helper module): left unchanged"
NO_TF_NOTE = "does not import TensorFlow or Keras: left unchanged (not parsed)"


@dataclass(frozen=True)
class FileTask:
    """One file to convert, and what to do with the result.

    The file:
      ``path``: the path as shown to the user (messages, report, diff
      headers); ``"<stdin>"`` for standard input.
      ``kind``: ``"py"`` or ``"ipynb"``.
      ``options``: the conversion's :class:`~tfdist.options.Options` (its
      backend ``auto`` is decided here, per file, from the file's code).
      ``abspath``: where to read the file (and, with ``inplace``, to write
      it); None for stdin.
      ``data``: the source bytes when they are already in memory (stdin);
      None means read ``abspath``.
      ``project``: the cross-module facts of the modules around the file
      (see :mod:`tfdist.project.index`), or None.

    Where it lives:
      ``tree``: part of a tree run (a TensorFlow module without a training
      loop is then a helper module, reported unchanged, not unsupported).
      ``symlink``: ``path`` is a symbolic link; ``broken``: a link whose
      target does not exist.
      ``link_in_tree``: for a link, the tree path of the file it points to
      when that file is converted in the same run (the link is then left
      alone), else None.

    What the mode asks (see :mod:`tfdist.project.runner`):
      ``diff``: make a unified diff of a converted file.
      ``inplace``: replace the file itself when it changes; ``backup``:
      keep the original as FILE.orig first.
      ``stdout``: send the resulting bytes back to print them.
      ``output``: the file to write the result to (``-o``), or None;
      ``mirror``: write there even when unchanged (a tree copy is complete).
    """

    # The file
    path: str
    kind: str
    options: Options
    abspath: Optional[str] = None
    data: Optional[bytes] = None
    project: Optional["ProjectContext"] = None
    # Where it lives
    tree: bool = False
    symlink: bool = False
    broken: bool = False
    link_in_tree: Optional[str] = None
    # What the mode asks
    diff: bool = False
    inplace: bool = False
    backup: bool = False
    stdout: bool = False
    output: Optional[str] = None
    mirror: bool = False


@dataclass(frozen=True)
class FileAnswer:
    """What converting one file gave, sent back to the parent process.

    The outcome (for the tallies and the human status line):
      ``path``: the task's display path.
      ``status``: one of the :mod:`tfdist.engine.findings` statuses
      (converted, unchanged, already distributed, unsupported, failed),
      after any write error.
      ``pattern``: the training pattern found (``"Unknown"`` when none).
      ``changes`` / ``warnings``: how many changes and warnings the
      conversion made (counts, not the findings themselves).
      ``error``: why the file was refused or failed, else None.
      ``note``: why a file is left unchanged (a helper module, no
      TensorFlow import, a link to a converted file), else None.

    For the report and the terminal:
      ``entry``: the file's entry in the ``--report`` JSON, a plain dict
      serialised as it is (its keys and their order are the report's).
      ``lines``: the human lines about the file (findings, errors) for
      stderr.

    Payloads (None when the mode does not ask for them):
      ``diff``: the unified diff text (``--diff``).
      ``stdout``: the converted bytes to print (stdout mode).
      ``written``: the path actually written (``-o`` / ``--in-place``).
    """

    # The outcome
    path: str
    status: str
    pattern: str
    changes: int
    warnings: int
    error: Optional[str]
    note: Optional[str]
    # For the report and the terminal
    entry: dict
    lines: List[str]
    # Payloads
    diff: Optional[str] = None
    stdout: Optional[bytes] = None
    written: Optional[str] = None


class WriteError(Exception):
    pass


def replace_atomically(path: str, fill, mode_from: Optional[str] = None) -> None:
    """Create ``path`` via a temporary file in the same folder, filled by
    ``fill(tmp_path)``, then os.replace: the target is never half-written."""
    directory = os.path.dirname(os.path.abspath(path))
    os.makedirs(directory, exist_ok=True)
    fd, tmp = tempfile.mkstemp(prefix=".tfdist-", suffix=".tmp", dir=directory)
    os.close(fd)
    try:
        fill(tmp)
        if mode_from:
            try:
                os.chmod(tmp, os.stat(mode_from).st_mode & 0o7777)
            except OSError:
                pass
        os.replace(tmp, path)
    except BaseException:
        try:
            os.unlink(tmp)
        except OSError:
            pass
        raise


def write_atomic(path: str, data: bytes, mode_from: Optional[str] = None) -> None:
    """Write bytes atomically (see replace_atomically)."""

    def fill(tmp: str) -> None:
        with open(tmp, "wb") as f:
            f.write(data)
            f.flush()
            os.fsync(f.fileno())

    replace_atomically(path, fill, mode_from)


def decode(data: bytes) -> str:
    """Text of Python source bytes (coding cookie, BOM), for diffs."""
    try:
        enc, _ = tokenize.detect_encoding(io.BytesIO(data).readline)
        return data.decode(enc)
    except (SyntaxError, LookupError, UnicodeDecodeError):
        return data.decode("utf-8", "replace")


def convert_one(task: FileTask) -> FileAnswer:
    """Convert (or refuse) one file and write what the mode asks. Never raises."""
    try:
        return _convert_one(task)
    except Exception as e:  # pragma: no cover - last resort, one file never stops a tree
        path = task.path
        r = F.FileResult(path=path, status=F.FAILED, error=f"internal error: {type(e).__name__}: {e}")
        return _answer(task, r, None, note=None)


def _read(task: FileTask):
    if task.data is not None:
        return task.data, None
    src = task.abspath
    if task.broken:
        return None, "broken symbolic link (its target does not exist)"
    try:
        if not os.path.exists(src):
            return None, "no such file"
        if os.path.isdir(src):
            return None, "is a directory (give a .py file; trees are converted with a directory argument)"
        with open(src, "rb") as f:
            return f.read(), None
    except OSError as e:
        return None, f"cannot read: {e.strerror or e}"


def _convert_one(task: FileTask) -> FileAnswer:
    path = task.path
    data, err = _read(task)
    if err:
        return _answer(task, F.FileResult(path=path, status=F.FAILED, error=err), None, note=None)
    note = None
    nb = None
    options, choice = resolve_options(task.options, _code(task.kind, data))
    if task.kind == "ipynb":
        nb = convert_notebook(path, data, options, task.project)
        result = nb.result
    else:
        result = convert_path(path, options, task.project, data=data)
    if task.tree and result.status == F.UNSUPPORTED and (result.error or "").startswith(NO_LOOP) \
            and not result.evidence:
        # what tfdist found instead of a training loop, if anything
        found = result.error.partition("; ")[2].removesuffix(": nothing converted")
        result.status, result.error, result.error_line, result.data = F.UNCHANGED, None, None, data
        note = f"{HELPER_NOTE}; {found}" if found else HELPER_NOTE
    return _answer(task, result, data, note=note, nb=nb, choice=choice)


def _code(kind: str, data: bytes) -> bytes:
    """The Python code ``--backend auto`` reads: a notebook's code cells as one script."""
    if kind != "ipynb":
        return data
    try:
        return notebook_script(data).encode("utf-8")
    except (ValueError, KeyError, TypeError, AttributeError, RecursionError):  # the conversion says what is wrong
        return b""


def _answer(task: FileTask, result: F.FileResult, data: Optional[bytes], note: Optional[str],
            nb=None, choice: Optional[Choice] = None) -> FileAnswer:
    path = task.path
    entry = nb.to_json() if nb is not None else result.to_json()
    entry["kind"] = task.kind
    if note:
        entry["note"] = note
    lines = nb.human_lines() if nb is not None else result.human_lines()
    if choice is not None and result.status in (F.CONVERTED, F.UNSUPPORTED):
        # --backend auto: which engine converted (or refused) this file, and why
        entry["backend"], entry["backend_reason"] = choice.backend, choice.reason
        lines = [f"{path}: {choice.describe()}", *lines]
    status, error, diff, stdout, written = result.status, result.error, None, None, None
    n_changes, n_warnings = len(result.changes), len(result.warnings)
    changed = result.status == F.CONVERTED and result.data is not None and data is not None and result.data != data
    if task.diff and changed:
        if nb is not None:
            diff = nb.diff()
        else:
            diff = "".join(difflib.unified_diff(
                decode(data).splitlines(keepends=True), result.code.splitlines(keepends=True),
                fromfile="a/" + path.lstrip("/"), tofile="b/" + path.lstrip("/")))
    if task.stdout and result.data is not None and result.status in (F.CONVERTED, F.UNCHANGED, F.ALREADY):
        stdout = result.data
    try:
        if task.inplace and changed:
            target = task.abspath
            if task.symlink:
                if task.link_in_tree:  # its target is converted as a file of the tree
                    note = f"a symbolic link to {task.link_in_tree}, which is converted itself: link left alone"
                    entry.update(status=F.UNCHANGED, note=note, changes=[], warnings=[])
                    entry["written"] = None
                    return FileAnswer(path=path, status=F.UNCHANGED, pattern=result.pattern, changes=n_changes,
                                      warnings=n_warnings, error=error, note=note, entry=entry, lines=[],
                                      diff=None, stdout=stdout, written=None)
                raise WriteError("a symbolic link to a file outside the tree: not replaced in place "
                                 "(convert the file it points to)")
            if task.backup:
                backup = target + ".orig"
                if os.path.lexists(backup):
                    raise WriteError(f"backup {os.path.basename(backup)} exists already; remove it or use --no-backup")
                write_atomic(backup, data, mode_from=target)
            write_atomic(target, result.data, mode_from=target)
            written = target
        elif task.output:
            payload = result.data if result.data is not None else data
            if payload is not None and (changed or task.mirror or result.status in (F.UNCHANGED, F.ALREADY)):
                write_atomic(task.output, payload, mode_from=None if task.data is not None else task.abspath)
                written = task.output
    except (OSError, WriteError) as e:
        msg = str(e) if isinstance(e, WriteError) else f"cannot write: {e.strerror or e}"
        status = F.FAILED
        error = msg
        lines = [*lines, f"{path}: ERROR error: {msg}"]
        entry["status"], entry["error"] = F.FAILED, msg
        diff = None
    entry["written"] = written
    return FileAnswer(path=path, status=status, pattern=result.pattern, changes=n_changes, warnings=n_warnings,
                      error=error, note=note, entry=entry, lines=lines, diff=diff, stdout=stdout, written=written)
