"""``tfdist run --strategy parameter-server -np W --ps P``: a script
converted for tf.distribute's ParameterServerStrategy (``tfdist convert
--backend tf-distribute --strategy parameter-server``) run as a cluster of
processes on this machine: a chief (the coordinator, which runs the
script), W workers and P parameter servers, each with its ``TF_CONFIG``
(``{"cluster": {"chief": [..], "worker": [..], "ps": [..]}, "task": ...}``)
on a free localhost port. Workers and parameter servers serve until they are
stopped: the chief's exit decides, and ends them; a worker or parameter
server that dies first ends the run with its status."""
from __future__ import annotations

import json
import sys

from . import launcher
from .command_line import EXIT_BAD_INPUT, err

PARAMETER_SERVER = "parameter-server"
#: What a script converted for parameter servers builds (its source shows it).
STRATEGY_CLASS = "ParameterServerStrategy"


def cluster_tasks(workers: int, parameter_servers: int) -> list[launcher.Worker]:
    """The chief (rank 0), the workers, then the parameter servers, each on a
    free localhost port with its TF_CONFIG; a task's label is its type and
    index (``worker:1``)."""
    kinds = [("chief", 0)] + [("worker", i) for i in range(workers)] + [("ps", i) for i in range(parameter_servers)]
    ports = launcher.free_ports(len(kinds))
    cluster: dict[str, list[str]] = {"chief": [], "worker": [], "ps": []}
    for (kind, _index), port in zip(kinds, ports):
        cluster[kind].append(f"localhost:{port}")
    return [launcher.Worker(rank=rank, host="localhost", port=port, label=f"{kind}:{index}",
                            tf_config=json.dumps({"cluster": cluster, "task": {"type": kind, "index": index}}))
            for rank, ((kind, index), port) in enumerate(zip(kinds, ports))]


def builds_parameter_servers(path: str) -> bool:
    """The script builds a ParameterServerStrategy (read from its source)."""
    try:
        with open(path, encoding="utf-8", errors="replace") as fh:
            return STRATEGY_CLASS in fh.read()
    except OSError:
        return False


def check(prog: str, args) -> bool:
    """The options of a parameter-server run go together (else False, said on stderr)."""
    if args.backend not in (None, "tf-distribute"):
        err(prog, "--strategy parameter-server is tf.distribute's ParameterServerStrategy: --backend tf-distribute")
        return False
    for option, value in (("-H", args.hosts), ("--slurm", args.slurm), ("--jobset", args.jobset),
                          ("--record", args.record), ("--this-host", args.this_host), ("--port", args.port),
                          ("--mpi", args.mpi)):
        if value:
            err(prog, f"{option} is not for --strategy parameter-server (one machine: a chief, -np workers and "
                      "--ps parameter servers on free localhost ports)")
            return False
    if args.np is None:
        err(prog, "--strategy parameter-server needs -np W (workers) and --ps P (parameter servers, default 1)")
        return False
    if not builds_parameter_servers(args.script):
        err(prog, f"{args.script} builds no {STRATEGY_CLASS}: convert it with `tfdist convert --backend "
                  "tf-distribute --strategy parameter-server`, or run it without --strategy parameter-server")
        return False
    return True


def run(prog: str, args, env: dict) -> int:
    """Start the cluster, stream its output prefixed by task, return the chief's status."""
    tasks = cluster_tasks(args.np, args.ps)
    python = args.python or sys.executable
    sys.stderr.write(f"{prog}: parameter servers: chief, {args.np} worker(s), {args.ps} parameter server(s) on "
                     f"localhost ports {', '.join(str(t.port) for t in tasks)}\n")
    sys.stderr.flush()
    try:
        result = launcher.execute_workers(tasks, [python, *args.script_command], timeout=args.timeout or None,
                                          env=env, sink=launcher.stream_to(sys.stdout), until=0)
    except KeyboardInterrupt:
        err(prog, "interrupted; the cluster was killed")
        return launcher.EXIT_INTERRUPTED
    except OSError as exc:
        err(prog, f"could not start {python}: {exc}")
        return EXIT_BAD_INPUT
    if result.timed_out:
        err(prog, f"timed out after {args.timeout:g}s; killed the cluster - raise --timeout if it needs longer")
        return launcher.EXIT_TIMEOUT
    failed = tasks[result.failed_worker].label if result.failed_worker is not None else None
    if failed is not None and failed != "chief:0":
        sys.stderr.write(f"{prog}: {failed} exited {result.returncode} before the chief ended; the cluster was "
                         "killed; see the task-prefixed output above\n")
    elif result.returncode != 0:
        sys.stderr.write(f"{prog}: the chief exited {result.returncode}; see the task-prefixed output above\n")
    return result.returncode
