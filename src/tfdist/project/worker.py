"""Converting one file and writing its output: the unit of work of a tree.

Runs in worker processes. A task is a small dict; the answer is a small
dict (status, report entry, human lines, diff text): converted code never
travels back to the parent unless it must go to stdout.
"""
from __future__ import annotations

import difflib
import io
import os
import tempfile
import tokenize
from typing import Optional

from ..engine import findings as F
from ..assembly import convert_path

NO_LOOP = "no training loop found"
HELPER_NOTE = "imports TensorFlow/Keras but has no training loop (a helper module): left unchanged"
NO_TF_NOTE = "does not import TensorFlow or Keras: left unchanged (not parsed)"


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


def convert_one(task: dict) -> dict:
    """Convert (or refuse) one file and write what the mode asks. Never raises."""
    try:
        return _convert_one(task)
    except Exception as e:  # pragma: no cover - last resort, one file never stops a tree
        path = task["path"]
        r = F.FileResult(path=path, status=F.FAILED, error=f"internal error: {type(e).__name__}: {e}")
        return _answer(task, r, None, note=None)


def _read(task: dict):
    if task.get("data") is not None:
        return task["data"], None
    src = task["abspath"]
    if task.get("broken"):
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


def _convert_one(task: dict) -> dict:
    path = task["path"]
    data, err = _read(task)
    if err:
        return _answer(task, F.FileResult(path=path, status=F.FAILED, error=err), None, note=None)
    note = None
    nb = None
    if task["kind"] == "ipynb":
        from .notebook import convert_notebook

        nb = convert_notebook(path, data, task["backend"], task.get("project"))
        result = nb.result
    else:
        result = convert_path(path, task["backend"], task.get("project"), data=data)
    if task.get("tree") and result.status == F.UNSUPPORTED and (result.error or "").startswith(NO_LOOP) \
            and not result.evidence:
        result.status, result.error, result.error_line, result.data = F.UNCHANGED, None, None, data
        note = HELPER_NOTE
    return _answer(task, result, data, note=note, nb=nb)


def _answer(task: dict, result: F.FileResult, data: Optional[bytes], note: Optional[str], nb=None) -> dict:
    path = task["path"]
    entry = nb.to_json() if nb is not None else result.to_json()
    entry["kind"] = task["kind"]
    if note:
        entry["note"] = note
    lines = nb.human_lines() if nb is not None else result.human_lines()
    out = {"path": path, "status": result.status, "pattern": result.pattern, "entry": entry, "lines": lines,
           "changes": len(result.changes), "warnings": len(result.warnings), "error": result.error,
           "note": note, "diff": None, "stdout": None, "written": None}
    changed = result.status == F.CONVERTED and result.data is not None and data is not None and result.data != data
    if task.get("diff") and changed:
        if nb is not None:
            out["diff"] = nb.diff()
        else:
            out["diff"] = "".join(difflib.unified_diff(
                decode(data).splitlines(keepends=True), result.code.splitlines(keepends=True),
                fromfile="a/" + path.lstrip("/"), tofile="b/" + path.lstrip("/")))
    if task.get("stdout") and result.data is not None and result.status in (F.CONVERTED, F.UNCHANGED, F.ALREADY):
        out["stdout"] = result.data
    try:
        if task.get("inplace") and changed:
            target = task["abspath"]
            if task.get("symlink"):
                if task.get("link_in_tree"):  # its target is converted as a file of the tree
                    note = f"a symbolic link to {task['link_in_tree']}, which is converted itself: link left alone"
                    out.update(status=F.UNCHANGED, note=note, diff=None, lines=[])
                    entry.update(status=F.UNCHANGED, note=note, changes=[], warnings=[])
                    out["entry"]["written"] = None
                    return out
                raise WriteError("a symbolic link to a file outside the tree: not replaced in place "
                                 "(convert the file it points to)")
            if task.get("backup"):
                backup = target + ".orig"
                if os.path.lexists(backup):
                    raise WriteError(f"backup {os.path.basename(backup)} exists already; remove it or use --no-backup")
                write_atomic(backup, data, mode_from=target)
            write_atomic(target, result.data, mode_from=target)
            out["written"] = target
        elif task.get("output"):
            payload = result.data if result.data is not None else data
            if payload is not None and (changed or task.get("mirror") or result.status in (F.UNCHANGED, F.ALREADY)):
                write_atomic(task["output"], payload, mode_from=None if task.get("data") is not None else task["abspath"])
                out["written"] = task["output"]
    except (OSError, WriteError) as e:
        msg = str(e) if isinstance(e, WriteError) else f"cannot write: {e.strerror or e}"
        out["status"] = F.FAILED
        out["error"] = msg
        out["lines"] = [*lines, f"{path}: ERROR error: {msg}"]
        entry["status"], entry["error"] = F.FAILED, msg
        out["diff"] = None
    out["entry"]["written"] = out["written"]
    return out
