"""What runs inside a Slurm task, written into the batch script itself: a
job needs nothing but the training environment (issue 40).

``tfdist job slurm --backend tf-distribute`` starts every task with srun, and
each task must know its place in the cluster before the script builds its
MultiWorkerMirroredStrategy. That takes a few lines of standard-library
Python (:data:`TF_DISTRIBUTE_TASK`): the batch script carries them and runs
them with the job's own interpreter (``"$PYTHON" -c "$TFDIST_TASK" SCRIPT
ARGS``), so the tasks import neither tfdist nor its converter (LibCST): a
training environment with TensorFlow is enough. They compute what ``tfdist
run --slurm`` computes (tfdist.runtime.slurm.step_workers; a fast test
holds the two equal): worker index SLURM_PROCID, the nodes in block order
with TASKS_PER_NODE tasks each, ports from the job and step ids so jobs
sharing a node do not collide, then the script runs as ``__main__`` in the
task's process. ``srun --label`` prefixes each line with the task's rank.

``--record`` (verify's probe) and ``--timeout`` still run ``tfdist run`` in
the job: they are tfdist's own features and need it installed there.
"""
from __future__ import annotations

import inspect

#: Tasks of one node listen on port_base(...) + SLURM_LOCALID (tfdist.runtime.slurm.port_base).
PORT_LOW, PORT_HIGH = 20000, 60000
#: Overrides the base port of a step (all tasks must see the same value).
PORT_ENV = "TFDIST_SLURM_PORT"
#: The environment variable holding the node names (``scontrol show
#: hostnames``, comma-separated) the batch script passes to its tasks.
NODES_ENV = "TFDIST_NODES"

#: The lines every task runs first: the job's nodes, its own place, the step's base port.
_PLACEMENT = f'''\
env = os.environ
nodes = [n for n in env["{NODES_ENV}"].split(",") if n]
per_node = int(env["TFDIST_TASKS_PER_NODE"])
rank, local = int(env["SLURM_PROCID"]), int(env["SLURM_LOCALID"])
if rank // per_node >= len(nodes) or rank % per_node != local:
    sys.exit(f"task {{rank}} runs as local task {{local}}, not where srun --distribution=block places it")
if env.get("{PORT_ENV}"):
    base = int(env["{PORT_ENV}"])
else:
    width = max(16, per_node)
    slots = ({PORT_HIGH} - {PORT_LOW}) // width
    base = {PORT_LOW} + ((int(env["SLURM_JOB_ID"]) * 7 + int(env.get("SLURM_STEP_ID", "0"))) % slots) * width
'''

TF_DISTRIBUTE_TASK = f'''\
import json, os, runpy, sys
{_PLACEMENT}workers = [f"{{node}}:{{base + i}}" for node in nodes for i in range(per_node)]
env["TF_CONFIG"] = json.dumps({{"cluster": {{"worker": workers}}, "task": {{"type": "worker", "index": rank}}}})
sys.argv = sys.argv[1:]
sys.path.insert(0, os.path.dirname(os.path.abspath(sys.argv[0])))
runpy.run_path(sys.argv[0], run_name="__main__")
'''


#: A task of a parameter-server job (``tfdist job slurm --ps P`` for a script
#: converted with --strategy parameter-server): task 0 is the chief, the last
#: P tasks the parameter servers, the others the workers, their TF_CONFIG
#: built as for a tf.distribute worker. The chief runs the script; a worker or
#: parameter server runs it as a child (it serves until stopped) and stops it
#: once the chief has ended -- the chief leaves a file in the job's directory
#: (TFDIST_CHIEF_DONE) -- so that srun, and the job, end with the chief's status.
PARAMETER_SERVER_TASK = f'''\
import json, os, runpy, subprocess, sys, time
{_PLACEMENT}addresses = [f"{{node}}:{{base + i}}" for node in nodes for i in range(per_node)]
servers = int(env["TFDIST_PARAMETER_SERVERS"])
workers = len(addresses) - 1 - servers
cluster = {{"chief": addresses[:1], "worker": addresses[1:1 + workers], "ps": addresses[1 + workers:]}}
kind, index = ("chief", 0) if rank == 0 else ("worker", rank - 1) if rank <= workers else ("ps", rank - 1 - workers)
env["TF_CONFIG"] = json.dumps({{"cluster": cluster, "task": {{"type": kind, "index": index}}}})
done = env["TFDIST_CHIEF_DONE"]
sys.argv = sys.argv[1:]
if kind == "chief":
    sys.path.insert(0, os.path.dirname(os.path.abspath(sys.argv[0])))
    try:
        runpy.run_path(sys.argv[0], run_name="__main__")
    finally:
        open(done, "w").close()
else:
    server = subprocess.Popen([sys.executable, *sys.argv])
    while server.poll() is None and not os.path.exists(done):
        time.sleep(0.5)
    if server.poll() is not None:
        sys.exit(server.returncode)
    server.terminate()
    try:
        server.wait(30)
    except subprocess.TimeoutExpired:
        server.kill()
'''


def horovod_rank_env(env):
    """The ``HOROVOD_*`` variables of the Horovod rank a Slurm task is (what
    horovodrun gives each rank it starts: horovod/runner/gloo_run.py,
    create_run_env_vars and the slot's rank, local and cross ranks), from
    SLURM_PROCID / SLURM_NTASKS / SLURM_LOCALID, the job's nodes in
    TFDIST_NODES and TFDIST_TASKS_PER_NODE tasks on each (srun
    --distribution=block), and the rendezvous the batch script started
    (HOROVOD_GLOO_RENDEZVOUS_ADDR / _PORT). Standard library only: the
    batch script carries this function's source (HOROVOD_TASK)."""
    nodes = [n for n in env["TFDIST_NODES"].split(",") if n]
    per_node = int(env["TFDIST_TASKS_PER_NODE"])
    rank, size, local = int(env["SLURM_PROCID"]), int(env["SLURM_NTASKS"]), int(env["SLURM_LOCALID"])
    node = rank // per_node
    if node >= len(nodes) or rank % per_node != local or size != len(nodes) * per_node:
        raise SystemExit(f"task {rank} of {size} runs as local task {local}, not where srun --distribution=block "
                         f"places {per_node} tasks on each of {len(nodes)} nodes")
    for name in ("HOROVOD_GLOO_RENDEZVOUS_ADDR", "HOROVOD_GLOO_RENDEZVOUS_PORT"):
        if not env.get(name):
            raise SystemExit(f"{name} is not set: the batch script starts the rendezvous before srun")
    return {"HOROVOD_HOSTNAME": nodes[node], "HOROVOD_RANK": str(rank), "HOROVOD_SIZE": str(size),
            "HOROVOD_LOCAL_RANK": str(local), "HOROVOD_LOCAL_SIZE": str(per_node),
            "HOROVOD_CROSS_RANK": str(node), "HOROVOD_CROSS_SIZE": str(len(nodes)),
            "HOROVOD_CONTROLLER": "gloo", "HOROVOD_CPU_OPERATIONS": "gloo"}


#: A task as one Horovod rank: its variables, then the script as __main__.
HOROVOD_TASK = inspect.getsource(horovod_rank_env) + '''
import os, runpy, sys
os.environ.update(horovod_rank_env(os.environ))
sys.argv = sys.argv[1:]
sys.path.insert(0, os.path.dirname(os.path.abspath(sys.argv[0])))
runpy.run_path(sys.argv[0], run_name="__main__")
'''

#: The Gloo rendezvous of the job, started by the batch script on its first
#: node before srun (what horovodrun starts itself: gloo_run.launch_gloo):
#: Horovod's own RendezvousServer with the hosts' slot plan; prints its port.
HOROVOD_RENDEZVOUS = '''\
import sys, time
from horovod.runner.common.util import hosts
from horovod.runner.http.http_server import RendezvousServer
plan = hosts.get_host_assignments(hosts.parse_hosts(sys.argv[1]), int(sys.argv[2]))
server = RendezvousServer(False)
port = server.start()
server.init(plan)
print(port, flush=True)
while True:
    time.sleep(3600)
'''


def carried(spec) -> bool:
    """Does the batch script of a tfdist.runtime.slurm.JobSpec carry its
    tasks' code (no tfdist in the job)? tfdist's own --record and --timeout
    need tfdist there."""
    return not spec.record and not spec.timeout


def horovod_lines(spec, script_words: list[str], run_words: str) -> list[str]:
    """The batch script's lines starting every Horovod rank as a Slurm task:
    the rendezvous here, then srun, each task a rank (:data:`HOROVOD_TASK`,
    or ``tfdist run --slurm`` (``run_words``) when tfdist's features are
    asked). No horovodrun, no ssh."""
    task = (" ".join(['"$PYTHON"', "-c", '"$TFDIST_TASK"', *script_words]) if carried(spec) else run_words)
    lines = [
        "# Every Horovod rank is a Slurm task (no horovodrun, no ssh): Horovod's Gloo rendezvous runs here,",
        "# on the first node, as horovodrun would start it; each task gets its rank's HOROVOD_* variables",
        "# from SLURM_PROCID and the job's nodes. --kill-on-bad-exit: a rank that fails ends the others.",
        f"export {NODES_ENV}=\"$(scontrol show hostnames \"$SLURM_JOB_NODELIST\" | paste -sd, -)\"",
        f"export TFDIST_TASKS_PER_NODE={spec.tasks_per_node}",
        "TFDIST_RENDEZVOUS=$(cat <<'TFDIST_RENDEZVOUS_END'",
        *HOROVOD_RENDEZVOUS.rstrip("\n").splitlines(),
        "TFDIST_RENDEZVOUS_END",
        ")",
        "RENDEZVOUS_PORT_FILE=$(mktemp)",
        f"\"$PYTHON\" -c \"$TFDIST_RENDEZVOUS\" \"$(echo \"${NODES_ENV}\" | sed 's/,/:{spec.tasks_per_node},/g'):"
        f"{spec.tasks_per_node}\" {spec.ntasks} > \"$RENDEZVOUS_PORT_FILE\" &",
        "RENDEZVOUS_PID=$!",
        "trap 'kill $RENDEZVOUS_PID 2>/dev/null; rm -f \"$RENDEZVOUS_PORT_FILE\"' EXIT",
        "for _ in $(seq 600); do [ -s \"$RENDEZVOUS_PORT_FILE\" ] && break; "
        "kill -0 $RENDEZVOUS_PID 2>/dev/null || break; sleep 0.1; done",
        "[ -s \"$RENDEZVOUS_PORT_FILE\" ] || { echo \"the Horovod rendezvous did not start\" >&2; exit 1; }",
        "export HOROVOD_GLOO_RENDEZVOUS_PORT=\"$(head -n1 \"$RENDEZVOUS_PORT_FILE\")\"",
        f"export HOROVOD_GLOO_RENDEZVOUS_ADDR=\"${{{NODES_ENV}%%,*}}\"",
    ]
    if carried(spec):
        lines += ["TFDIST_TASK=$(cat <<'TFDIST_TASK_END'", *HOROVOD_TASK.rstrip("\n").splitlines(),
                  "TFDIST_TASK_END", ")"]
    label = " --label" if carried(spec) else ""  # tfdist run prefixes its lines itself ([R]<stdout>:)
    return lines + [f"srun --kill-on-bad-exit=1 --distribution=block{label} --ntasks={spec.ntasks} {task}"]


def tf_distribute_lines(spec, script_words: list[str]) -> list[str]:
    """The batch script's lines starting one tf.distribute worker per task
    with :data:`TF_DISTRIBUTE_TASK` (``script_words``: the script and its
    arguments, quoted)."""
    return [
        "# One tf.distribute worker per task. Each task builds its own TF_CONFIG from SLURM_PROCID and",
        "# the job's nodes (worker 0 is the chief; ports from the job id) with the few lines below, run by",
        "# the job's Python: the tasks need TensorFlow, not tfdist. --label prefixes lines with the rank;",
        "# --kill-on-bad-exit: a task that fails ends the others (they would wait for it forever).",
        f"export {NODES_ENV}=\"$(scontrol show hostnames \"$SLURM_JOB_NODELIST\" | paste -sd, -)\"",
        f"export TFDIST_TASKS_PER_NODE={spec.tasks_per_node}",
        "TFDIST_TASK=$(cat <<'TFDIST_TASK_END'",
        *TF_DISTRIBUTE_TASK.rstrip("\n").splitlines(),
        "TFDIST_TASK_END",
        ")",
        f"srun --kill-on-bad-exit=1 --distribution=block --label --ntasks={spec.ntasks} "
        + " ".join(['"$PYTHON"', "-c", '"$TFDIST_TASK"', *script_words]),
    ]


def parameter_server_lines(spec, script_words: list[str]) -> list[str]:
    """The batch script's lines starting a parameter-server cluster: a chief,
    workers and spec.parameter_servers parameter servers, one per task
    (:data:`PARAMETER_SERVER_TASK`)."""
    workers = spec.ntasks - 1 - spec.parameter_servers
    return [
        f"# A parameter-server cluster, one task each: task 0 the chief (it runs the training and schedules",
        f"# the steps), tasks 1-{workers} the {workers} worker(s), the last {spec.parameter_servers} the parameter "
        "server(s), each",
        "# with the TF_CONFIG the few lines below build from SLURM_PROCID and the job's nodes (ports from the",
        "# job id). Workers and parameter servers serve until the chief has ended (it leaves the file",
        "# TFDIST_CHIEF_DONE), so the job ends with the chief's status; --kill-on-bad-exit: a task that fails",
        "# ends the others. The tasks need TensorFlow and tf-keras, not tfdist.",
        f"export {NODES_ENV}=\"$(scontrol show hostnames \"$SLURM_JOB_NODELIST\" | paste -sd, -)\"",
        f"export TFDIST_TASKS_PER_NODE={spec.tasks_per_node}",
        f"export TFDIST_PARAMETER_SERVERS={spec.parameter_servers}",
        "export TFDIST_CHIEF_DONE=\"$PWD/.tfdist-chief-done-$SLURM_JOB_ID\"",
        "trap 'rm -f \"$TFDIST_CHIEF_DONE\"' EXIT",
        "TFDIST_TASK=$(cat <<'TFDIST_TASK_END'",
        *PARAMETER_SERVER_TASK.rstrip("\n").splitlines(),
        "TFDIST_TASK_END",
        ")",
        f"srun --kill-on-bad-exit=1 --distribution=block --label --ntasks={spec.ntasks} "
        + " ".join(['"$PYTHON"', "-c", '"$TFDIST_TASK"', *script_words]),
    ]
