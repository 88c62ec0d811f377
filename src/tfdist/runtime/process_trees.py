"""Process-tree bookkeeping (Linux /proc; elsewhere only the process group).

horovodrun starts each rank under a "middleman" that calls setsid(), so
killing horovodrun's process group alone would not reach the ranks: the
launcher records every descendant of the processes it starts (pid and start
time, so a reused pid is never signalled) and kills them all.
"""
from __future__ import annotations

import os
import signal
import subprocess
import time
from typing import Sequence

KILL_GRACE_S = 5.0


def proc_table() -> dict[int, tuple[int, str]]:
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


def descendants(root: int, table: dict[int, tuple[int, str]]) -> dict[int, str]:
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
    return kill_trees([(proc, known)], grace)


def kill_trees(jobs: Sequence[tuple[subprocess.Popen, dict[int, str]]], grace: float = KILL_GRACE_S) -> list[int]:
    """:func:`kill_tree` for several process trees at once (one grace period
    for all of them)."""
    jobs = [(proc, {**known, **descendants(proc.pid, proc_table())}) for proc, known in jobs]
    signalled = []

    def send(sig):
        for proc, known in jobs:
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

    def finished():
        return all(proc.poll() is not None and not any(_alive(p, s) for p, s in known.items())
                   for proc, known in jobs)

    send(signal.SIGTERM)
    deadline = time.monotonic() + grace
    while time.monotonic() < deadline:
        if finished():
            break
        time.sleep(0.1)
    send(signal.SIGKILL)
    for proc, _ in jobs:
        try:
            proc.wait(timeout=grace)
        except subprocess.TimeoutExpired:
            pass
    return signalled


def kill_leftovers(known: dict[int, str]) -> list[int]:
    """SIGKILL the recorded processes still alive (once their launcher has exited); returns their pids."""
    leftovers = [pid for pid, st in known.items() if _alive(pid, st)]
    for pid in leftovers:
        try:
            os.kill(pid, signal.SIGKILL)
        except OSError:
            pass
    return leftovers
