"""A one-node Slurm cluster of the tests' own: a slurm.conf in a temporary
directory (controller and node on this machine, ``hostname -s``, its CPUs),
and munged, slurmctld and slurmd started from it -- and stopped again.

The packages come from ``scripts/setup_slurm.sh`` (Debian's slurm-wlm and
munge; scripts/test.sh runs it).  Nothing outside the directory is touched:
munged gets its own key, socket and pid file there, the daemons listen on
free ports, and clients (sbatch, srun, scontrol) find the cluster through
``SLURM_CONF`` in :attr:`SlurmCluster.env` -- which a job inherits, so
``srun`` inside a batch script finds it too.

    cluster = SlurmCluster.start(directory)     # or why_unavailable() first
    subprocess.run(["sbatch", ...], env=cluster.env)
    cluster.stop()

By hand (the README's "Past one machine" example on this machine)::

    python tests/slow/support/slurm_cluster.py start /tmp/slurm   # prints: export SLURM_CONF=...
    python tests/slow/support/slurm_cluster.py stop /tmp/slurm
"""
from __future__ import annotations

import os
import random
import shutil
import signal
import socket
import subprocess
import sys
import time
from dataclasses import dataclass, field
from pathlib import Path

DAEMONS = ("munged", "slurmctld", "slurmd")
CLIENTS = ("sbatch", "srun", "scontrol", "squeue")


def _which(tool: str) -> str | None:
    return shutil.which(tool) or next((p for p in (f"/usr/sbin/{tool}", f"/usr/bin/{tool}")
                                       if os.access(p, os.X_OK)), None)


def why_unavailable() -> str | None:
    """None when a one-node cluster can be started here, else the reason."""
    missing = [t for t in DAEMONS + CLIENTS if _which(t) is None]
    if missing:
        return (f"Slurm is not installed ({', '.join(missing)} missing): run `bash scripts/setup_slurm.sh` "
                "(Debian's slurm-wlm and munge; needs root)")
    if os.geteuid() != 0:
        return "starting slurmd needs root (it starts the jobs' processes as their users)"
    return None


def _free_ports(n: int) -> list[int]:
    socks = []
    try:
        for _ in range(n):
            s = socket.socket()
            s.bind(("", 0))
            socks.append(s)
        return [s.getsockname()[1] for s in socks]
    finally:
        for s in socks:
            s.close()


@dataclass
class SlurmCluster:
    directory: Path
    node: str
    cpus: int
    env: dict = field(default_factory=dict)

    @property
    def conf(self) -> Path:
        return self.directory / "slurm.conf"

    @classmethod
    def start(cls, directory: str | os.PathLike, cpus: int | None = None, timeout: float = 60) -> "SlurmCluster":
        reason = why_unavailable()
        if reason:
            raise RuntimeError(reason)
        d = Path(directory).resolve()
        d.mkdir(parents=True, exist_ok=True)
        os.chmod(d, 0o700)   # munged refuses directories others can write to
        for sub in ("state", "spool", "munge"):
            (d / sub).mkdir(exist_ok=True)
            os.chmod(d / sub, 0o700)
        node = socket.gethostname().split(".")[0]
        cpus = cpus or os.cpu_count() or 1
        cluster = cls(directory=d, node=node, cpus=cpus)
        key = d / "munge" / "munge.key"
        if not key.exists():
            key.write_bytes(os.urandom(1024))
        os.chmod(key, 0o600)
        sock = d / "munge" / "munge.socket"
        ctld_port, slurmd_port = _free_ports(2)
        cluster.conf.write_text("\n".join([
            "# one-node cluster of tfdist's tests (tests/slow/support/slurm_cluster.py)",
            "ClusterName=tfdist-test",
            f"SlurmctldHost={node}",
            f"SlurmctldPort={ctld_port}",
            f"SlurmdPort={slurmd_port}",
            "SlurmUser=root",
            "SlurmdUser=root",
            "AuthType=auth/munge",
            "CredType=cred/munge",
            f"AuthInfo=socket={sock}",
            f"StateSaveLocation={d / 'state'}",
            f"SlurmdSpoolDir={d / 'spool'}",
            f"SlurmctldPidFile={d / 'slurmctld.pid'}",
            f"SlurmdPidFile={d / 'slurmd.pid'}",
            f"SlurmctldLogFile={d / 'slurmctld.log'}",
            f"SlurmdLogFile={d / 'slurmd.log'}",
            "ProctrackType=proctrack/linuxproc",   # no cgroups needed (containers, CI)
            "TaskPlugin=task/none",
            "MpiDefault=none",
            "SelectType=select/cons_tres",
            "SelectTypeParameters=CR_CPU",
            "SchedulerType=sched/builtin",
            "AccountingStorageType=accounting_storage/none",
            "JobCompType=jobcomp/none",
            "JobAcctGatherType=jobacct_gather/none",
            "ReturnToService=2",
            "MinJobAge=600",
            # job ids of their own: clusters started side by side (one per pytest
            # worker) never give two jobs the same id, and so the same ports
            f"FirstJobId={random.randrange(1000, 60000)}",
            "KillWait=5",
            "InactiveLimit=0",
            # the node as configured, even with more CPUs than the machine has (a job of
            # more tasks than cores: a parameter-server cluster on a 2-core test machine)
            "SlurmdParameters=config_overrides",
            f"NodeName={node} CPUs={cpus} State=UNKNOWN",
            "PartitionName=debug Nodes=ALL Default=YES MaxTime=INFINITE State=UP OverSubscribe=YES",
            "",
        ]))
        env = dict(os.environ)
        env["SLURM_CONF"] = str(cluster.conf)
        for name in [k for k in env if k.startswith(("SLURM_", "SBATCH_", "SRUN_", "SALLOC_"))]:
            if name != "SLURM_CONF":
                del env[name]
        cluster.env = env
        try:
            subprocess.run([_which("munged"), f"--key-file={key}", f"--socket={sock}",
                            f"--pid-file={d / 'munge' / 'munged.pid'}", f"--log-file={d / 'munge' / 'munged.log'}",
                            f"--seed-file={d / 'munge' / 'munged.seed'}", "--force"],
                           check=True, capture_output=True, text=True, timeout=30)
            subprocess.run([_which("slurmctld"), "-f", str(cluster.conf)], check=True, env=env,
                           capture_output=True, text=True, timeout=30)
            subprocess.run([_which("slurmd"), "-f", str(cluster.conf)], check=True, env=env,
                           capture_output=True, text=True, timeout=30)
            cluster.wait_idle(timeout)
        except BaseException as exc:
            logs = cluster.logs()
            cluster.stop()
            if isinstance(exc, subprocess.CalledProcessError):
                raise RuntimeError(f"{exc.cmd[0]} failed: {exc.stderr}\n{logs}") from exc
            if isinstance(exc, Exception):
                raise RuntimeError(f"the one-node Slurm did not start: {exc}\n{logs}") from exc
            raise
        return cluster

    def wait_idle(self, timeout: float) -> None:
        deadline = time.monotonic() + timeout
        last = ""
        while time.monotonic() < deadline:
            proc = subprocess.run([_which("scontrol"), "show", "node", self.node, "-o"], env=self.env,
                                  capture_output=True, text=True, timeout=30)
            last = proc.stdout + proc.stderr
            if proc.returncode == 0 and "State=IDLE" in proc.stdout:
                return
            time.sleep(0.5)
        raise TimeoutError(f"node {self.node} not idle after {timeout:g}s: {last.strip()}")

    def logs(self) -> str:
        out = []
        for name in ("slurmctld.log", "slurmd.log", "munge/munged.log"):
            path = self.directory / name
            if path.exists():
                out.append(f"--- {name} ---\n" + "\n".join(path.read_text(errors="replace").splitlines()[-20:]))
        return "\n".join(out)

    def stop(self) -> None:
        """Stop the daemons this cluster started (by their pid files)."""
        stop_daemons(self.directory, ("slurmd.pid", "slurmctld.pid", "munge/munged.pid"))


def stop_daemons(directory: Path, pidfiles) -> None:
    """SIGTERM each daemon named by a pid file in directory, SIGKILL after 10 s."""
    for pidfile in pidfiles:
        path = directory / pidfile
        try:
            pid = int(path.read_text().strip())
        except (OSError, ValueError):
            continue
        try:
            os.kill(pid, signal.SIGTERM)
        except OSError:
            continue
        for _ in range(100):
            try:
                os.kill(pid, 0)
            except OSError:
                break
            time.sleep(0.1)
        else:
            try:
                os.kill(pid, signal.SIGKILL)
            except OSError:
                pass


def main(argv: list[str]) -> int:
    if len(argv) != 2 or argv[0] not in ("start", "stop"):
        print("usage: slurm_cluster.py start|stop DIRECTORY", file=sys.stderr)
        return 2
    if argv[0] == "start":
        cluster = SlurmCluster.start(argv[1])
        print(f"export SLURM_CONF={cluster.conf}")
    else:
        d = Path(argv[1]).resolve()
        SlurmCluster(directory=d, node="", cpus=0).stop()
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
