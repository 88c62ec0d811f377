"""Launching scripts under ``horovodrun`` with streaming output and a hard
timeout that takes the whole process tree down."""
from __future__ import annotations

import os
import shutil
import signal
import subprocess
import sys
import threading
import time
from collections import deque
from dataclasses import dataclass, field
from pathlib import Path
from typing import Callable, Iterable, Mapping, Sequence

INSTALL_HINT = (
    "run `bash scripts/setup_runtime.sh` from the tfdist checkout, or "
    "`HOROVOD_WITH_TENSORFLOW=1 HOROVOD_WITH_GLOO=1 pip install --no-build-isolation horovod==0.28.1`"
)
EXIT_TIMEOUT = 124
EXIT_INTERRUPTED = 130
KILL_GRACE_S = 5.0

#: Environment variables that make a process think it is one rank of a job;
#: removed for single-process reference runs.
LAUNCHER_ENV_PREFIXES = ("HOROVOD_", "OMPI_", "PMI_", "PMIX_")


class RuntimeMissing(RuntimeError):
    """horovodrun (Horovod) is not installed where tfdist can find it."""

    def __init__(self, what: str = "horovodrun"):
        super().__init__(f"{what} not found (Horovod is not installed): {INSTALL_HINT}")


def find_horovodrun(executable: str | None = None, path: str | None = None) -> str | None:
    """horovodrun next to the running interpreter first, then on PATH."""
    exe = executable if executable is not None else sys.executable
    if exe:
        candidate = Path(exe).parent / "horovodrun"  # do not resolve venv symlinks
        if candidate.is_file() and os.access(candidate, os.X_OK):
            return str(candidate)
    return shutil.which("horovodrun", path=path if path is not None else os.environ.get("PATH", os.defpath))


def python_for(horovodrun: str | None) -> str:
    """The interpreter the ranks should use: the one horovodrun was installed
    for (its ``#!`` line, or ``python`` next to it), else sys.executable."""
    if horovodrun:
        sibling = Path(horovodrun).parent / "python"
        try:
            with open(horovodrun, "rb") as fh:
                first = fh.readline(512).decode("utf-8", "replace").strip()
            if first.startswith("#!"):
                parts = first[2:].split()
                if parts and os.path.basename(parts[0]).startswith("python") and os.access(parts[0], os.X_OK):
                    return parts[0]
        except OSError:
            pass
        if sibling.is_file() and os.access(sibling, os.X_OK):
            return str(sibling)
    return sys.executable


def horovodrun_command(np: int, command: Sequence[str], *, horovodrun: str, hosts: str | None = None,
                       mpi: bool = False, extra: Sequence[str] = ()) -> list[str]:
    """``horovodrun -np N -H localhost:N --gloo COMMAND...``"""
    cmd = [horovodrun, "-np", str(np), "-H", hosts or f"localhost:{np}", "--mpi" if mpi else "--gloo"]
    cmd.extend(extra)
    cmd.extend(command)
    return cmd


def single_process_env(env: Mapping[str, str]) -> dict[str, str]:
    return {k: v for k, v in env.items() if not k.startswith(LAUNCHER_ENV_PREFIXES)}


# --------------------------------------------------------------------------
# Process-tree bookkeeping (Linux /proc; elsewhere only the process group).
# horovodrun starts each rank under a "middleman" that calls setsid(), so
# killing horovodrun's process group alone would not reach the ranks.
# --------------------------------------------------------------------------

def _proc_table() -> dict[int, tuple[int, str]]:
    """pid -> (ppid, start time) for every visible process."""
    table = {}
    try:
        names = os.listdir("/proc")
    except OSError:
        return table
    for name in names:
        if not name.isdigit():
            continue
        try:
            with open(f"/proc/{name}/stat", "rb") as fh:
                data = fh.read().decode("utf-8", "replace")
        except OSError:
            continue
        rest = data[data.rfind(")") + 2:].split()
        try:
            table[int(name)] = (int(rest[1]), rest[19])
        except (IndexError, ValueError):
            continue
    return table


def _descendants(root: int, table: dict[int, tuple[int, str]]) -> dict[int, str]:
    children: dict[int, list[int]] = {}
    for pid, (ppid, _) in table.items():
        children.setdefault(ppid, []).append(pid)
    out, stack = {}, [root]
    while stack:
        for child in children.get(stack.pop(), ()):
            if child not in out:
                out[child] = table[child][1]
                stack.append(child)
    return out


def _alive(pid: int, start: str | None) -> bool:
    if start is None:
        try:
            os.kill(pid, 0)
            return True
        except OSError:
            return False
    try:
        with open(f"/proc/{pid}/stat", "rb") as fh:
            data = fh.read().decode("utf-8", "replace")
    except OSError:
        return False
    rest = data[data.rfind(")") + 2:].split()
    return len(rest) > 19 and rest[19] == start and rest[0] != "Z"


def kill_tree(proc: subprocess.Popen, known: dict[int, str], grace: float = KILL_GRACE_S) -> list[int]:
    """SIGTERM the launcher, its process group and every known descendant;
    SIGKILL whatever is still alive after ``grace`` seconds.  Returns the
    pids that were signalled."""
    known = dict(known)
    known.update(_descendants(proc.pid, _proc_table()))
    signalled = []

    def send(sig):
        if proc.poll() is None:
            for target in (lambda: os.killpg(proc.pid, sig), lambda: proc.send_signal(sig)):
                try:
                    target()
                except OSError:
                    pass
        for pid, start in known.items():
            if _alive(pid, start):
                try:
                    os.kill(pid, sig)
                    if pid not in signalled:
                        signalled.append(pid)
                except OSError:
                    pass

    send(signal.SIGTERM)
    deadline = time.monotonic() + grace
    while time.monotonic() < deadline:
        if proc.poll() is not None and not any(_alive(p, s) for p, s in known.items()):
            break
        time.sleep(0.1)
    send(signal.SIGKILL)
    try:
        proc.wait(timeout=grace)
    except subprocess.TimeoutExpired:
        pass
    return signalled


@dataclass
class LaunchResult:
    returncode: int
    timed_out: bool
    duration_s: float
    command: list[str]
    tail: list[str] = field(default_factory=list)
    killed_pids: list[int] = field(default_factory=list)
    leftover_pids: list[int] = field(default_factory=list)

    @property
    def ok(self) -> bool:
        return self.returncode == 0 and not self.timed_out


def execute(command: Sequence[str], *, timeout: float | None = None, env: Mapping[str, str] | None = None,
            cwd: str | os.PathLike | None = None, sink: Callable[[str], None] | None = None,
            log_path: str | os.PathLike | None = None, tail_lines: int = 200) -> LaunchResult:
    """Run ``command`` in a new session, stream its merged stdout/stderr line
    by line to ``sink`` (and ``log_path``), and enforce ``timeout`` (seconds,
    None/0 = no limit) by killing the whole process tree.  Never waits on
    stray grandchildren: once the launcher has exited (or was killed), any
    descendant still alive is killed too and output reading stops."""
    command = [os.fspath(c) for c in command]
    start = time.monotonic()
    tail: deque[str] = deque(maxlen=tail_lines)
    log = open(log_path, "w", encoding="utf-8", errors="replace") if log_path else None
    proc = subprocess.Popen(command, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, stdin=subprocess.DEVNULL,
                            env=dict(env) if env is not None else None, cwd=cwd, start_new_session=True)

    def pump():
        try:
            for raw in iter(proc.stdout.readline, b""):
                line = raw.decode("utf-8", "replace")
                tail.append(line.rstrip("\n"))
                if log is not None:
                    log.write(line)
                    log.flush()
                if sink is not None:
                    try:
                        sink(line)
                    except Exception:  # noqa: BLE001 - a broken sink must not hang us
                        pass
        except (OSError, ValueError):
            pass

    reader = threading.Thread(target=pump, name="tfdist-output", daemon=True)
    reader.start()
    known: dict[int, str] = {}
    timed_out = False
    killed: list[int] = []
    deadline = start + timeout if timeout else None
    last_scan = 0.0
    try:
        while True:
            try:
                proc.wait(timeout=0.25)
                break
            except subprocess.TimeoutExpired:
                pass
            now = time.monotonic()
            if now - last_scan >= 1.0:
                known.update(_descendants(proc.pid, _proc_table()))
                last_scan = now
            if deadline is not None and now >= deadline:
                timed_out = True
                killed = kill_tree(proc, known)
                break
    except BaseException:
        # Ctrl-C, or the caller's own timeout (e.g. a test alarm): never leave
        # the job running behind us.
        kill_tree(proc, known)
        reader.join(timeout=2)
        if log is not None:
            log.close()
        raise
    # The launcher is gone; anything it left behind would hold our pipe open.
    leftovers = [pid for pid, st in known.items() if _alive(pid, st)]
    if leftovers:
        for pid in leftovers:
            try:
                os.kill(pid, signal.SIGKILL)
            except OSError:
                pass
    reader.join(timeout=5)
    try:
        proc.stdout.close()
    except OSError:
        pass
    if log is not None:
        log.close()
    rc = proc.returncode if proc.returncode is not None else -9
    if timed_out:
        rc = EXIT_TIMEOUT
    elif rc < 0:
        rc = 128 - rc
    return LaunchResult(returncode=rc, timed_out=timed_out, duration_s=time.monotonic() - start,
                        command=command, tail=list(tail), killed_pids=killed, leftover_pids=leftovers)


def stream_to(stream) -> Callable[[str], None]:
    def sink(line: str) -> None:
        stream.write(line)
        stream.flush()
    return sink


def tfdist_pythonpath() -> str:
    """The directory that makes ``import tfdist`` work (the src dir)."""
    import tfdist

    return str(Path(tfdist.__file__).resolve().parent.parent)


def with_pythonpath(env: Mapping[str, str], entries: Iterable[str]) -> dict[str, str]:
    env = dict(env)
    parts = [e for e in entries if e]
    if env.get("PYTHONPATH"):
        parts.append(env["PYTHONPATH"])
    env["PYTHONPATH"] = os.pathsep.join(parts)
    return env
