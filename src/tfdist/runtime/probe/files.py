"""Files the script writes: TensorFlow / Keras / h5py entry points and an
audit hook on Python ``open()``."""
from __future__ import annotations

import os
import sys

from .patch import get_arg, install_patch
from .state import STATE, probe_busy, note_error
from .tables import H5PY_FILE_CLASS, PATH_KIND_PATTERNS, TEMP_FILE_PATTERNS, WRITE_MODE_ARGS


def _path_to_str(path):
    if path is None:
        return None
    if isinstance(path, int):
        return None
    try:
        if hasattr(path, "numpy"):  # eager string tensor
            path = path.numpy()
    except Exception:  # noqa: BLE001
        return None
    if isinstance(path, bytes):
        path = path.decode("utf-8", "replace")
    try:
        path = os.fspath(path)
    except TypeError:
        return None
    if isinstance(path, bytes):
        path = path.decode("utf-8", "replace")
    return path if isinstance(path, str) and path else None


def compute_ignore_prefixes():
    """(always-ignored prefixes, temp prefix, cwd prefix)."""
    import site
    import tempfile

    prefixes = {sys.prefix, sys.base_prefix, sys.exec_prefix, sys.base_exec_prefix,
                "/dev", "/proc", "/sys"}
    try:
        prefixes.update(site.getsitepackages())
    except Exception:  # noqa: BLE001
        pass
    try:
        prefixes.add(site.getusersitepackages())
    except Exception:  # noqa: BLE001
        pass
    home = os.path.expanduser("~")
    for sub in (".cache", ".keras", ".config", ".nv", ".local/lib"):
        prefixes.add(os.path.join(home, sub))
    if STATE.probe_dir:
        prefixes.add(STATE.probe_dir)

    def norm(p):
        return os.path.realpath(p).rstrip(os.sep) + os.sep

    always = tuple(sorted({norm(p) for p in prefixes if p}))
    # Temporary files are noise, except under the directory the script runs
    # in (tfdist verify runs scripts inside a temporary directory).
    return always, norm(tempfile.gettempdir()), norm(STATE.start_cwd)


def _ignored(real: str) -> bool:
    check = real + os.sep
    always, tmp, cwd = STATE.ignore_prefixes
    if check.startswith(cwd) and not any(cwd.startswith(p) for p in always):
        return False
    if any(check.startswith(p) for p in always):
        return True
    return check.startswith(tmp)


def classify_path(path: str, default: str = "file") -> str:
    for pattern, kind in PATH_KIND_PATTERNS:
        if pattern.search(path):
            return kind
    return default


def _record_file(path, kind: str, via: str) -> None:
    try:
        path = _path_to_str(path)
        if path is None:
            return
        if "://" in path and not path.startswith("file://"):
            full = path
        else:
            if path.startswith("file://"):
                path = path[len("file://"):]
            full = os.path.abspath(path)
            real = os.path.realpath(full)
            if "__pycache__" in real:
                return
            if _ignored(real):
                return
        for pattern in TEMP_FILE_PATTERNS:
            if pattern.search(full):
                return
        if kind == "file":
            kind = classify_path(full, "file")
        with STATE.lock:
            entry = STATE.files.get(full)
            if entry is None:
                STATE.files[full] = {"path": full, "kind": kind, "via": [via], "count": 1}
            else:
                entry["count"] += 1
                if entry["kind"] == "file" and kind != "file":
                    entry["kind"] = kind
                if via not in entry["via"]:
                    entry["via"].append(via)
    except Exception as exc:  # noqa: BLE001
        note_error("record_file", exc)


_WRITE_FLAGS = os.O_WRONLY | os.O_RDWR | os.O_APPEND | os.O_CREAT | os.O_TRUNC


def audit_hook(event, args):
    if event != "open":
        return
    try:
        if STATE.pid != os.getpid() or probe_busy():
            return
        path, mode, flags = args
        if isinstance(flags, int) and flags >= 0:
            if not flags & _WRITE_FLAGS:
                return
        elif not (isinstance(mode, str) and any(c in mode for c in "wax+")):
            return
        if (isinstance(flags, int) and flags >= 0 and flags & os.O_RDWR
                and not flags & (os.O_CREAT | os.O_TRUNC | os.O_APPEND)) or _opens_in_place(mode):
            _note_in_place(path)
        _record_file(path, "file", "open")
    except Exception:  # noqa: BLE001 - never raise from an audit hook
        pass


def _is_write_mode(mode) -> bool:
    if mode is None:
        return False
    if isinstance(mode, bytes):
        mode = mode.decode()
    mode = str(mode)
    return any(c in mode for c in "wax+")


def _opens_in_place(mode) -> bool:
    """Read-write without creating or truncating ("r+", "rb+"): may not write."""
    if isinstance(mode, bytes):
        mode = mode.decode()
    return isinstance(mode, str) and "+" in mode and "r" in mode and not any(c in mode for c in "wax")


def _note_in_place(path) -> None:
    try:
        full = os.path.abspath(_path_to_str(path))
        st = os.stat(full)
    except (OSError, TypeError):
        return
    with STATE.lock:
        if full not in STATE.files:  # recorded as written before: it stays written
            STATE.updated_in_place.setdefault(full, (st.st_mtime_ns, st.st_size))


def drop_unchanged_in_place() -> None:
    """A file only opened read-write, and unchanged since: not written."""
    for full, (mtime, size) in list(STATE.updated_in_place.items()):
        entry = STATE.files.get(full)
        try:
            st = os.stat(full)
        except OSError:
            continue
        if entry is not None and (st.st_mtime_ns, st.st_size) == (mtime, size):
            del STATE.files[full]


def make_file_wrapper(qualname: str, path_spec: str, kind: str):
    mode_spec = WRITE_MODE_ARGS.get(qualname)

    def make(orig):
        def wrapper(*args, **kwargs):
            result = orig(*args, **kwargs)
            if STATE.pid == os.getpid() and not probe_busy():
                try:
                    mode = get_arg(mode_spec, args, kwargs) if mode_spec is not None else None
                    if mode_spec is None or _is_write_mode(mode):
                        path = get_arg(path_spec, args, kwargs, result)
                        if mode_spec is not None and _opens_in_place(mode):
                            _note_in_place(path)
                        _record_file(path, kind, qualname)
                except Exception as exc:  # noqa: BLE001
                    note_error(qualname, exc)
            return result
        return wrapper
    return make


def install_h5py(module, group):
    mod_name, cls_name = H5PY_FILE_CLASS
    install_patch(mod_name, cls_name + ".__init__", make_file_wrapper("File.__init__", "arg:1:name", "model"))


def path_exists(path: str) -> bool:
    """The path, or files it is the prefix of (a TF checkpoint prefix
    ``ckpt/model`` is ``ckpt/model.index`` + ``ckpt/model.data-*``)."""
    if "://" in path:
        return True
    if os.path.lexists(path):
        return True
    import glob

    return bool(glob.glob(glob.escape(path) + ".*"))
