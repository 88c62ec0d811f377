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

#: Tasks of one node listen on port_base(...) + SLURM_LOCALID (tfdist.runtime.slurm.port_base).
PORT_LOW, PORT_HIGH = 20000, 60000
#: Overrides the base port of a step (all tasks must see the same value).
PORT_ENV = "TFDIST_SLURM_PORT"
#: The environment variable holding the node names (``scontrol show
#: hostnames``, comma-separated) the batch script passes to its tasks.
NODES_ENV = "TFDIST_NODES"

TF_DISTRIBUTE_TASK = f'''\
import json, os, runpy, sys
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
workers = [f"{{node}}:{{base + i}}" for node in nodes for i in range(per_node)]
env["TF_CONFIG"] = json.dumps({{"cluster": {{"worker": workers}}, "task": {{"type": "worker", "index": rank}}}})
sys.argv = sys.argv[1:]
sys.path.insert(0, os.path.dirname(os.path.abspath(sys.argv[0])))
runpy.run_path(sys.argv[0], run_name="__main__")
'''


def carried(spec) -> bool:
    """Does the batch script of a tfdist.runtime.slurm.JobSpec carry its
    tasks' code (no tfdist in the job)?"""
    return spec.backend == "tf-distribute" and not spec.record and not spec.timeout


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
