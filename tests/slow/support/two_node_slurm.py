"""A two-node Slurm cluster on one machine, for the tests (issue 40).

Two network namespaces joined by a veth pair are the two "nodes" (``n1`` at
10.77.X.1, ``n2`` at 10.77.X.2): TCP between them goes over the veth, as
between two hosts. Each daemon runs in its node's namespace with a host name
of its own (``unshare --uts``) and an ``/etc/hosts`` naming both nodes
(``unshare --mount`` and a bind mount, seen by that daemon and the jobs it
starts only). slurmctld and slurmd ``n1`` run in the first namespace, slurmd
``n2`` in the second; munged runs once (its socket is a file both reach).
Slurm's clients reach the controller from the first namespace:
:meth:`TwoNodeSlurm.command` wraps a command so it runs there.

Nothing outside the cluster's directory is changed but the two namespaces
and the veth pair, which :meth:`TwoNodeSlurm.stop` removes.

    cluster = TwoNodeSlurm.start(directory)        # or why_unavailable() first
    subprocess.run(cluster.command(["sbatch", ...]), env=cluster.env)
    cluster.stop()
"""
from __future__ import annotations

import json
import os
import random
import shutil
import subprocess
import sys
import time
from dataclasses import dataclass, field
from pathlib import Path

from slurm_cluster import _free_ports, _which, stop_daemons, why_unavailable as why_no_slurm

NODES = ("n1", "n2")


def why_unavailable() -> str | None:
    reason = why_no_slurm()
    if reason:
        return reason
    for tool in ("ip", "nsenter", "unshare", "mount"):
        if shutil.which(tool) is None:
            return f"{tool} is not installed (iproute2 / util-linux)"
    probe = subprocess.run(["ip", "netns", "list"], capture_output=True, text=True)
    if probe.returncode != 0:
        return f"network namespaces are not available here: {probe.stderr.strip()}"
    return None


def _run(*cmd: str, check: bool = True) -> subprocess.CompletedProcess:
    return subprocess.run(list(cmd), check=check, capture_output=True, text=True, timeout=60)


@dataclass
class TwoNodeSlurm:
    directory: Path
    namespaces: tuple
    veth: tuple
    addresses: tuple
    cpus: int
    env: dict = field(default_factory=dict)

    @property
    def conf(self) -> Path:
        return self.directory / "slurm.conf"

    def command(self, argv: list[str], node: int = 0) -> list[str]:
        """argv run in a node's network namespace (the first: where the
        controller is). nsenter, not ``ip netns exec``: that one mounts a
        sysfs of its own, without the cgroup file system slurmd needs."""
        return ["nsenter", f"--net=/var/run/netns/{self.namespaces[node]}", *argv]

    def _daemon(self, node: int, argv: list[str]) -> None:
        """Start a daemon in node's namespace, with its host name and /etc/hosts."""
        script = (f"mount --bind {self.directory / 'hosts'} /etc/hosts && hostname {NODES[node]} && "
                  + " ".join(argv))
        proc = subprocess.run(self.command(["unshare", "--mount", "--uts", "sh", "-c", script], node),
                              env=self.env, capture_output=True, text=True, timeout=60)
        if proc.returncode != 0:
            raise RuntimeError(f"{argv[0]} on {NODES[node]} failed: {proc.stderr}")

    @classmethod
    def start(cls, directory: str | os.PathLike, cpus: int = 2, timeout: float = 60) -> "TwoNodeSlurm":
        reason = why_unavailable()
        if reason:
            raise RuntimeError(reason)
        d = Path(directory).resolve()
        d.mkdir(parents=True, exist_ok=True)
        os.chmod(d, 0o700)
        for sub in ("state", "munge"):
            (d / sub).mkdir(exist_ok=True)
            os.chmod(d / sub, 0o700)
        tag = f"{os.getpid() % 10000}{random.randrange(100)}"
        subnet = random.randrange(10, 250)
        cluster = cls(directory=d, namespaces=(f"tfdn{tag}a", f"tfdn{tag}b"), veth=(f"tfv{tag}a", f"tfv{tag}b"),
                      addresses=(f"10.77.{subnet}.1", f"10.77.{subnet}.2"), cpus=cpus)
        try:
            cluster._network()
            cluster._configure()
            cluster._daemons()
            cluster.wait_idle(timeout)
        except BaseException as exc:
            logs = cluster.logs()
            cluster.stop()
            if isinstance(exc, Exception):
                raise RuntimeError(f"the two-node Slurm did not start: {exc}\n{logs}") from exc
            raise
        return cluster

    def _network(self) -> None:
        for ns in self.namespaces:
            _run("ip", "netns", "add", ns)
        _run("ip", "link", "add", self.veth[0], "type", "veth", "peer", "name", self.veth[1])
        for ns, dev, addr in zip(self.namespaces, self.veth, self.addresses):
            _run("ip", "link", "set", dev, "netns", ns)
            _run("ip", "netns", "exec", ns, "ip", "addr", "add", f"{addr}/24", "dev", dev)
            _run("ip", "netns", "exec", ns, "ip", "link", "set", dev, "up")
            _run("ip", "netns", "exec", ns, "ip", "link", "set", "lo", "up")
        (self.directory / "hosts").write_text(
            "127.0.0.1 localhost\n" + "".join(f"{a} {n}\n" for a, n in zip(self.addresses, NODES)))

    def _configure(self) -> None:
        d = self.directory
        key = d / "munge" / "munge.key"
        if not key.exists():
            key.write_bytes(os.urandom(1024))
        os.chmod(key, 0o600)
        ctld_port, slurmd_port = _free_ports(2)
        self.conf.write_text("\n".join([
            "# two-node cluster of tfdist's tests (tests/slow/support/two_node_slurm.py)",
            "ClusterName=tfdist-two",
            f"SlurmctldHost={NODES[0]}({self.addresses[0]})",
            f"SlurmctldPort={ctld_port}",
            f"SlurmdPort={slurmd_port}",
            "SlurmUser=root",
            "SlurmdUser=root",
            "AuthType=auth/munge",
            "CredType=cred/munge",
            f"AuthInfo=socket={d / 'munge' / 'munge.socket'}",
            f"StateSaveLocation={d / 'state'}",
            f"SlurmdSpoolDir={d / 'spool-%n'}",
            f"SlurmctldPidFile={d / 'slurmctld.pid'}",
            f"SlurmdPidFile={d / 'slurmd-%n.pid'}",
            f"SlurmctldLogFile={d / 'slurmctld.log'}",
            f"SlurmdLogFile={d / 'slurmd-%n.log'}",
            "ProctrackType=proctrack/linuxproc",
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
            f"FirstJobId={random.randrange(1000, 60000)}",
            "KillWait=5",
            "InactiveLimit=0",
            *[f"NodeName={n} NodeAddr={a} CPUs={self.cpus} State=UNKNOWN" for n, a in zip(NODES, self.addresses)],
            "PartitionName=debug Nodes=ALL Default=YES MaxTime=INFINITE State=UP OverSubscribe=YES",
            "",
        ]))
        env = {k: v for k, v in os.environ.items() if not k.startswith(("SLURM_", "SBATCH_", "SRUN_", "SALLOC_"))}
        env["SLURM_CONF"] = str(self.conf)
        self.env = env

    def _daemons(self) -> None:
        d = self.directory
        _run(_which("munged"), f"--key-file={d / 'munge' / 'munge.key'}", f"--socket={d / 'munge' / 'munge.socket'}",
             f"--pid-file={d / 'munge' / 'munged.pid'}", f"--log-file={d / 'munge' / 'munged.log'}",
             f"--seed-file={d / 'munge' / 'munged.seed'}", "--force")
        for node in NODES:
            (d / f"spool-{node}").mkdir(exist_ok=True)
        self._daemon(0, [_which("slurmctld"), "-f", str(self.conf)])
        for i, node in enumerate(NODES):
            self._daemon(i, [_which("slurmd"), "-f", str(self.conf), "-N", node])

    def wait_idle(self, timeout: float) -> None:
        deadline = time.monotonic() + timeout
        last = ""
        while time.monotonic() < deadline:
            proc = subprocess.run(self.command([_which("sinfo"), "-h", "-N", "-o", "%N %t"]), env=self.env,
                                  capture_output=True, text=True, timeout=30)
            last = proc.stdout + proc.stderr
            states = dict(line.split() for line in proc.stdout.splitlines() if len(line.split()) == 2)
            if proc.returncode == 0 and all(states.get(n) == "idle" for n in NODES):
                return
            time.sleep(0.5)
        raise TimeoutError(f"nodes not idle after {timeout:g}s: {last.strip()}")

    def logs(self) -> str:
        out = []
        for name in ("slurmctld.log", "slurmd-n1.log", "slurmd-n2.log", "munge/munged.log"):
            path = self.directory / name
            if path.exists():
                out.append(f"--- {name} ---\n" + "\n".join(path.read_text(errors="replace").splitlines()[-20:]))
        return "\n".join(out)

    def stop(self) -> None:
        """Stop the daemons, then remove the namespaces and the veth pair."""
        stop_daemons(self.directory, ("slurmd-n1.pid", "slurmd-n2.pid", "slurmctld.pid", "munge/munged.pid"))
        _run("ip", "link", "del", self.veth[0], check=False)
        for ns in self.namespaces:
            _run("ip", "netns", "del", ns, check=False)


def main(argv: list[str]) -> int:
    """By hand: ``start DIR`` brings the cluster up and says how to reach it;
    ``stop DIR`` takes it down again."""
    if len(argv) != 2 or argv[0] not in ("start", "stop"):
        print("usage: two_node_slurm.py start|stop DIRECTORY", file=sys.stderr)
        return 2
    state = Path(argv[1]).resolve() / "cluster.json"
    if argv[0] == "start":
        c = TwoNodeSlurm.start(argv[1])
        state.write_text(json.dumps({"namespaces": c.namespaces, "veth": c.veth, "addresses": c.addresses,
                                     "cpus": c.cpus}))
        print(f"two nodes n1, n2 up; submit from the first: nsenter --net=/var/run/netns/{c.namespaces[0]} "
              f"env SLURM_CONF={c.conf} sbatch ... (or tfdist job slurm ... --submit --wait)")
        return 0
    saved = json.loads(state.read_text())
    TwoNodeSlurm(directory=state.parent, namespaces=tuple(saved["namespaces"]), veth=tuple(saved["veth"]),
                 addresses=tuple(saved["addresses"]), cpus=saved["cpus"]).stop()
    return 0


if __name__ == "__main__":
    raise SystemExit(main(sys.argv[1:]))
