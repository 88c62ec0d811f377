"""Launching scripts with streaming output and a hard timeout that takes the
whole process tree down: under ``horovodrun`` (the Horovod engine), or as N
``TF_CONFIG`` workers started by tfdist itself (the tf-distribute engine,
:func:`execute_workers`)."""
from __future__ import annotations

import json
import os
import shutil
import socket
import subprocess
import sys
import threading
import time
from collections import deque
from dataclasses import dataclass, field
from pathlib import Path
from typing import Callable, Iterable, Mapping, Sequence

import tfdist

from .process_trees import descendants, kill_leftovers, kill_tree, kill_trees, proc_table

INSTALL_HINT = (
    "run `bash scripts/setup_runtime.sh` from the tfdist checkout, or "
    "`HOROVOD_WITH_TENSORFLOW=1 HOROVOD_WITH_GLOO=1 pip install --no-build-isolation horovod==0.28.1`"
)
EXIT_TIMEOUT = 124
EXIT_INTERRUPTED = 130

#: Environment variables that make a process think it is one rank of a job;
#: removed for single-process reference runs.
LAUNCHER_ENV_PREFIXES = ("HOROVOD_", "OMPI_", "PMI_", "PMIX_")
#: The same for tf.distribute (MultiWorkerMirroredStrategy reads TF_CONFIG).
LAUNCHER_ENV_NAMES = ("TF_CONFIG",)


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
    return {k: v for k, v in env.items()
            if not k.startswith(LAUNCHER_ENV_PREFIXES) and k not in LAUNCHER_ENV_NAMES}


@dataclass
class LaunchResult:
    returncode: int
    timed_out: bool
    duration_s: float
    command: list[str]
    tail: list[str] = field(default_factory=list)
    killed_pids: list[int] = field(default_factory=list)
    leftover_pids: list[int] = field(default_factory=list)
    #: tf-distribute: each worker's exit status (None: killed by tfdist after
    #: another worker failed or on timeout), and the first worker that failed.
    worker_returncodes: list[int | None] = field(default_factory=list)
    failed_worker: int | None = None

    @property
    def ok(self) -> bool:
        return self.returncode == 0 and not self.timed_out


class _Output:
    """Where launched processes' lines go: ``sink``, the log file and the last
    ``tail_lines`` lines; thread-safe (one reader thread per stream)."""

    def __init__(self, sink: Callable[[str], None] | None, log_path: str | os.PathLike | None, tail_lines: int):
        self.sink = sink
        self.tail: deque[str] = deque(maxlen=tail_lines)
        self.log = open(log_path, "w", encoding="utf-8", errors="replace") if log_path else None
        self.lock = threading.Lock()

    def line(self, line: str) -> None:
        with self.lock:
            self.tail.append(line.rstrip("\n"))
            if self.log is not None:
                self.log.write(line)
                self.log.flush()
            if self.sink is not None:
                try:
                    self.sink(line)
                except Exception:  # noqa: BLE001 - a broken sink must not hang us
                    pass

    def reader(self, stream, prefix: str = "") -> threading.Thread:
        def pump():
            try:
                for raw in iter(stream.readline, b""):
                    text = raw.decode("utf-8", "replace")
                    if prefix and not text.endswith("\n"):
                        text += "\n"   # a last line without newline stays one prefixed line
                    self.line(prefix + text)
            except (OSError, ValueError):
                pass

        thread = threading.Thread(target=pump, name="tfdist-output", daemon=True)
        thread.start()
        return thread

    def close(self) -> None:
        if self.log is not None:
            self.log.close()


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
    out = _Output(sink, log_path, tail_lines)
    proc = subprocess.Popen(command, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, stdin=subprocess.DEVNULL,
                            env=dict(env) if env is not None else None, cwd=cwd, start_new_session=True)
    reader = out.reader(proc.stdout)
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
                known.update(descendants(proc.pid, proc_table()))
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
        out.close()
        raise
    # The launcher is gone; anything it left behind would hold our pipe open.
    leftovers = kill_leftovers(known)
    reader.join(timeout=5)
    try:
        proc.stdout.close()
    except OSError:
        pass
    out.close()
    rc = proc.returncode if proc.returncode is not None else -9
    if timed_out:
        rc = EXIT_TIMEOUT
    elif rc < 0:
        rc = 128 - rc
    return LaunchResult(returncode=rc, timed_out=timed_out, duration_s=time.monotonic() - start,
                        command=command, tail=list(out.tail), killed_pids=killed, leftover_pids=leftovers)


# --------------------------------------------------------------------------
# tf.distribute: TF_CONFIG workers started by tfdist itself
# --------------------------------------------------------------------------

#: First port of a multi-host cluster (worker i listens on PORT + i).
DEFAULT_BASE_PORT = 23456
LOCAL_HOST_NAMES = ("localhost", "127.0.0.1", "::1", "ip6-localhost")


class HostsError(ValueError):
    """A -H / --this-host value that cannot describe the cluster."""


@dataclass
class Worker:
    """One tf.distribute worker: its index in TF_CONFIG (= its rank), where it
    runs, and its TF_CONFIG."""
    rank: int
    host: str
    port: int
    tf_config: str | None   # None: a Horovod rank (its HOROVOD_* variables are in the base environment)
    local: bool = True      # started by this tfdist
    label: str | None = None  # its output's prefix when not its rank (parameter servers: "chief:0", "ps:1")

    def env(self, base: Mapping[str, str]) -> dict[str, str]:
        env = dict(base)
        if self.tf_config is not None:
            env["TF_CONFIG"] = self.tf_config
        return env


def parse_hosts(hosts: str) -> list[tuple[str, int]]:
    """``"h1:2,h2:4"`` -> [("h1", 2), ("h2", 4)]; a host without ``:slots`` has 1 slot."""
    out: list[tuple[str, int]] = []
    for item in hosts.split(","):
        item = item.strip()
        if not item:
            continue
        name, sep, slots = item.rpartition(":")
        if not sep:
            name, slots = item, "1"
        if not name or not slots.isdigit() or int(slots) < 1:
            raise HostsError(f"bad host entry {item!r} (expected HOST:SLOTS, e.g. host1:2)")
        if any(name == seen for seen, _ in out):
            raise HostsError(f"host {name!r} is listed twice")
        out.append((name, int(slots)))
    if not out:
        raise HostsError("no hosts given")
    return out


def is_local_host(host: str) -> bool:
    if host in LOCAL_HOST_NAMES or host.startswith("127."):
        return True
    try:
        return host in (socket.gethostname(), socket.getfqdn())
    except OSError:
        return False


#: How many ports below the kernel's ephemeral range free_ports draws from.
LISTEN_PORT_SPAN = 12000


def ephemeral_port_range() -> tuple[int, int]:
    """The ports the kernel hands out to outgoing connections and to bind(0)."""
    try:
        low, high = (int(v) for v in Path("/proc/sys/net/ipv4/ip_local_port_range").read_text().split())
        return low, high
    except (OSError, ValueError):
        return 32768, 60999  # Linux's default


def free_ports(n: int, host: str = "localhost") -> list[int]:
    """``n`` distinct TCP ports that are free on this machine right now (all
    bound at once, then released: another program may still take one before
    the workers bind it, which makes a worker fail at start-up).

    They are drawn at random from the ports just below the kernel's
    ephemeral range: a port the kernel picked (bind to port 0) would be in
    that range, where any outgoing connection -- the gRPC channels of
    another cluster starting beside this one -- may take it before this
    cluster's worker listens on it ("Could not start gRPC server", seen
    once in 3 test-suite runs)."""
    import random

    address = "127.0.0.1" if host in LOCAL_HOST_NAMES else ""
    low = ephemeral_port_range()[0]
    candidates = list(range(max(1024, low - LISTEN_PORT_SPAN), low))
    random.SystemRandom().shuffle(candidates)
    sockets: list[socket.socket] = []
    try:
        for port in candidates:
            if len(sockets) == n:
                break
            sock = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
            try:
                sock.bind((address, port))
            except OSError:
                sock.close()
                continue
            sockets.append(sock)
        while len(sockets) < n:  # no room below the range: let the kernel pick
            sock = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
            sock.bind((address, 0))
            sockets.append(sock)
        return [s.getsockname()[1] for s in sockets]
    finally:
        for sock in sockets:
            sock.close()


def tf_config(cluster: Sequence[str], index: int) -> str:
    """``{"cluster": {"worker": [...]}, "task": {"type": "worker", "index": i}}``"""
    return json.dumps({"cluster": {"worker": list(cluster)}, "task": {"type": "worker", "index": index}})


def tf_distribute_workers(np: int, hosts: str | None = None, *, this_host: str | None = None,
                          base_port: int | None = None) -> list[Worker]:
    """The ``np`` workers of a tf.distribute cluster (worker index = rank;
    MultiWorkerMirroredStrategy makes worker 0 the chief).

    One host (no ``hosts``, or a single local host): free localhost ports.
    Several hosts: ``hosts`` slots are filled in order; worker i listens on
    ``base_port + i`` (default DEFAULT_BASE_PORT; distinct ports on every host,
    so two "hosts" may even be two names of one machine) and only the
    workers of this machine (``this_host``, else the host that names this
    machine) are marked ``local``: the other hosts' workers must be started
    there, by the same command with ``--this-host``."""
    entries = parse_hosts(hosts) if hosts else [("localhost", np)]
    total = sum(slots for _, slots in entries)
    if total < np:
        raise HostsError(f"-np {np} needs {np} slots, the hosts have {total}")
    placed: list[tuple[str, int]] = []          # (host, slot on that host)
    for name, slots in entries:
        for slot in range(slots):
            if len(placed) < np:
                placed.append((name, slot))
    used = []
    for name, _ in placed:
        if name not in used:
            used.append(name)
    if this_host is not None:
        if this_host not in used:
            raise HostsError(f"--this-host {this_host!r} is not one of the hosts that get workers ({', '.join(used)})")
        local_hosts = {this_host}
    elif len(used) == 1 and is_local_host(used[0]):
        local_hosts = {used[0]}
    else:
        local_hosts = {h for h in used if is_local_host(h)}
        if len(local_hosts) > 1:
            raise HostsError("several hosts name this machine (" + ", ".join(sorted(local_hosts))
                             + "): say which one this is with --this-host")
        if not local_hosts:
            raise HostsError("none of the hosts is this machine (" + ", ".join(used)
                             + "): run tfdist on one of them, or say which one this is with --this-host")
    if len(used) == 1 and is_local_host(used[0]) and base_port is None:
        ports = free_ports(np, used[0])
    else:
        base = DEFAULT_BASE_PORT if base_port is None else base_port
        ports = [base + i for i in range(len(placed))]
        if ports[-1] > 65535:
            raise HostsError(f"--port {base} + {np} workers goes past port 65535")
    cluster = [f"{name}:{port}" for (name, _), port in zip(placed, ports)]
    return [Worker(rank=i, host=name, port=ports[i], tf_config=tf_config(cluster, i), local=name in local_hosts)
            for i, (name, _) in enumerate(placed)]


def execute_workers(workers: Sequence[Worker], command: Sequence[str], *, timeout: float | None = None,
                    env: Mapping[str, str] | None = None, cwd: str | os.PathLike | None = None,
                    sink: Callable[[str], None] | None = None, log_path: str | os.PathLike | None = None,
                    tail_lines: int = 200, until: int | None = None) -> LaunchResult:
    """Start ``command`` once per local worker, each with its TF_CONFIG and in
    its own session; stream every line prefixed like horovodrun does
    (``[RANK]<stdout>:`` / ``[RANK]<stderr>:``) to ``sink`` and ``log_path``.

    As soon as one worker exits non-zero, every other worker (and their
    children) is killed - the survivors would otherwise wait forever in a
    collective - and its exit status is the result's.  ``timeout`` (seconds,
    None/0 = no limit) kills them all and returns EXIT_TIMEOUT. ``until``: the
    rank whose exit ends the run (the chief of parameter servers, whose
    workers and servers never end by themselves): the others are killed then."""
    command = [os.fspath(c) for c in command]
    local = [w for w in workers if w.local]
    base_env = dict(os.environ if env is None else env)
    start = time.monotonic()
    out = _Output(sink, log_path, tail_lines)
    procs: list[subprocess.Popen] = []
    readers: list[threading.Thread] = []
    known: list[dict[int, str]] = []
    killed: list[int] = []
    deadline = start + timeout if timeout else None
    try:
        for w in local:
            proc = subprocess.Popen(command, stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                                    stdin=subprocess.DEVNULL, env=w.env(base_env), cwd=cwd,
                                    start_new_session=True)
            procs.append(proc)
            known.append({})
            readers.append(out.reader(proc.stdout, f"[{w.label or w.rank}]<stdout>:"))
            readers.append(out.reader(proc.stderr, f"[{w.label or w.rank}]<stderr>:"))
        codes, failed, timed_out = _watch(local, procs, known, deadline, until)
        if timed_out or failed is not None or until is not None:
            running = [(p, kn) for p, kn in zip(procs, known) if p.poll() is None or kn]
            if running:
                killed = kill_trees(running)
    except BaseException:
        # Ctrl-C, a start-up error, or the caller's own timeout: never leave
        # workers running behind us.
        kill_trees(list(zip(procs, known)))
        for r in readers:
            r.join(timeout=2)
        out.close()
        raise
    leftovers = kill_leftovers({pid: st for kn in known for pid, st in kn.items()})
    for r in readers:
        r.join(timeout=5)
    _close_pipes(procs)
    out.close()
    worker_codes = [_status(codes.get(w.rank)) for w in local]
    if timed_out:
        rc = EXIT_TIMEOUT
    elif failed is not None:
        rc = _status(codes[failed]) or 1
    else:
        rc = 0
    return LaunchResult(returncode=rc, timed_out=timed_out, duration_s=time.monotonic() - start,
                        command=command, tail=list(out.tail), killed_pids=killed, leftover_pids=leftovers,
                        worker_returncodes=worker_codes, failed_worker=failed)


def _watch(local: Sequence[Worker], procs: list[subprocess.Popen], known: list[dict[int, str]],
           deadline: float | None, until: int | None = None) -> tuple[dict[int, int | None], int | None, bool]:
    """Poll the workers until one exits non-zero, all have exited, or the
    deadline passes: (exit code by rank, the first rank that failed, whether
    time ran out). Every second each running worker's process tree is added
    to ``known``, so its children can be killed with it."""
    codes: dict[int, int | None] = {}
    failed: int | None = None
    last_scan = 0.0
    while True:
        for w, proc in zip(local, procs):
            if w.rank not in codes and proc.poll() is not None:
                codes[w.rank] = proc.returncode
                if proc.returncode != 0 and failed is None:
                    failed = w.rank
        if failed is not None or len(codes) == len(procs) or until in codes:
            return codes, failed, False
        now = time.monotonic()
        if now - last_scan >= 1.0:
            for proc, kn in zip(procs, known):
                if proc.poll() is None:
                    kn.update(descendants(proc.pid, proc_table()))
            last_scan = now
        if deadline is not None and now >= deadline:
            return codes, failed, True
        time.sleep(0.2)


def _close_pipes(procs: list[subprocess.Popen]) -> None:
    for proc in procs:
        for stream in (proc.stdout, proc.stderr):
            try:
                stream.close()
            except OSError:
                pass


def _status(code: int | None) -> int | None:
    """A worker's exit status as a shell reports it (a signal N: 128 + N)."""
    return None if code is None else (128 - code if code < 0 else code)


def stream_to(stream) -> Callable[[str], None]:
    def sink(line: str) -> None:
        stream.write(line)
        stream.flush()
    return sink


def tfdist_pythonpath() -> str:
    """The directory that makes ``import tfdist`` work (the src dir)."""
    return str(Path(tfdist.__file__).resolve().parent.parent)


def with_pythonpath(env: Mapping[str, str], entries: Iterable[str]) -> dict[str, str]:
    env = dict(env)
    parts = [e for e in entries if e]
    if env.get("PYTHONPATH"):
        parts.append(env["PYTHONPATH"])
    env["PYTHONPATH"] = os.pathsep.join(parts)
    return env
