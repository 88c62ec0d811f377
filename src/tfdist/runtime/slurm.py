"""Slurm: each task's place in a job from the ``SLURM_*`` variables, the
``sbatch`` script ``tfdist job slurm`` writes, and submitting / waiting.

Inside a job Slurm tells every task where it is: ``SLURM_PROCID`` (its rank
in the step), ``SLURM_NTASKS``, ``SLURM_LOCALID`` (its index on its node),
``SLURM_STEP_NODELIST`` (``node[01-04]``) and ``SLURM_STEP_TASKS_PER_NODE``
(``2(x4)``).  The batch script itself (no step) sees the allocation:
``SLURM_JOB_NODELIST`` and ``SLURM_TASKS_PER_NODE``.

* tf.distribute: ``srun`` starts one ``tfdist run --backend tf-distribute``
  per task, and each builds its own ``TF_CONFIG`` from those variables
  (:func:`step_workers`).  The cluster lists the tasks in rank order, placed
  on the nodes in blocks (the script runs ``srun --distribution=block``).
  Ports: tasks of one node listen on ``base + SLURM_LOCALID``, the base
  chosen from the job and step ids (:func:`port_base`), so two jobs sharing
  a node do not collide.  ``tf.distribute.cluster_resolver.SlurmClusterResolver``
  is not used: it runs ``nvidia-smi`` and fails on nodes without GPUs.
* Horovod (Gloo, no MPI needed): every rank is a task ``srun`` starts; the
  batch script starts Horovod's Gloo rendezvous on the first node first and
  each task takes its rank's ``HOROVOD_*`` variables from the ``SLURM_*``
  ones (tfdist.runtime.slurm_tasks): no horovodrun, no ssh. ``tfdist run
  --slurm`` run once in a batch script without that rendezvous still starts
  ``horovodrun -np SLURM_NTASKS -H`` the allocation (:func:`horovod_hosts`).

The batch script carries what each task runs (tfdist.runtime.slurm_tasks), so
a job needs its training environment, not tfdist.
"""
from __future__ import annotations

import os
import re
import shlex
import subprocess
import sys
import time
from dataclasses import dataclass, field
from pathlib import Path
from typing import Callable, Mapping

from . import launcher, slurm_tasks
from .slurm_tasks import PORT_ENV, PORT_HIGH, PORT_LOW  # noqa: F401
TERMINAL_STATES = ("COMPLETED", "FAILED", "CANCELLED", "TIMEOUT", "OUT_OF_MEMORY", "NODE_FAIL", "PREEMPTED",
                   "BOOT_FAIL", "DEADLINE")
_TIME = re.compile(r"^(?:\d+|\d+:\d{1,2}|\d+:\d{1,2}:\d{1,2}|\d+-\d+|\d+-\d+:\d{1,2}|\d+-\d+:\d{1,2}:\d{1,2})$")
_NAME = re.compile(r"^[A-Za-z0-9_.+-]+$")


class SlurmError(ValueError):
    """SLURM_* variables (or options) that do not describe a job tfdist can place."""


# --------------------------------------------------------------------------
# Slurm's compact lists
# --------------------------------------------------------------------------

def _split_top(text: str) -> list[str]:
    """Split at commas outside brackets: ``a[1-2],b`` -> [``a[1-2]``, ``b``]."""
    parts, depth, cur = [], 0, ""
    for ch in text:
        if ch == "[":
            depth += 1
        elif ch == "]":
            depth -= 1
        if ch == "," and depth == 0:
            parts.append(cur)
            cur = ""
        else:
            cur += ch
    if depth != 0:
        raise SlurmError(f"unbalanced brackets in host list {text!r}")
    parts.append(cur)
    return [p for p in parts if p]


def expand_hostlist(text: str) -> list[str]:
    """``node[01-03,07],gpu[1-2]x`` -> node01, node02, node03, node07, gpu1x, gpu2x
    (what ``scontrol show hostnames`` prints; brackets may repeat)."""
    hosts: list[str] = []
    for item in _split_top(text.strip()):
        m = re.match(r"^([^\[]*)\[([^\]]+)\](.*)$", item)
        if not m:
            hosts.append(item)
            continue
        head, ranges, tail = m.groups()
        for tail_host in expand_hostlist(tail) if "[" in tail else [tail]:
            for rng in ranges.split(","):
                lo, sep, hi = rng.partition("-")
                if not lo.isdigit() or (sep and not hi.isdigit()):
                    raise SlurmError(f"bad range {rng!r} in host list {text!r}")
                width = len(lo)
                for i in range(int(lo), int(hi if sep else lo) + 1):
                    hosts.append(f"{head}{i:0{width}d}{tail_host}")
    return hosts


def expand_counts(text: str) -> list[int]:
    """``2(x3),1`` -> [2, 2, 2, 1] (SLURM_TASKS_PER_NODE's form)."""
    out: list[int] = []
    for item in text.strip().split(","):
        m = re.match(r"^(\d+)(?:\(x(\d+)\))?$", item.strip())
        if not m:
            raise SlurmError(f"bad task count {item!r} in {text!r}")
        out.extend([int(m.group(1))] * int(m.group(2) or 1))
    return out


# --------------------------------------------------------------------------
# Where each task runs
# --------------------------------------------------------------------------

def in_step(env: Mapping[str, str]) -> bool:
    """Inside an ``srun`` job step (each task has its SLURM_PROCID)."""
    return "SLURM_STEP_ID" in env and "SLURM_PROCID" in env and "SLURM_JOB_ID" in env


def in_job(env: Mapping[str, str]) -> bool:
    return "SLURM_JOB_ID" in env


def _int(env: Mapping[str, str], name: str) -> int:
    value = env.get(name)
    if value is None or not value.strip().lstrip("-").isdigit():
        raise SlurmError(f"{name} is {'not set' if value is None else repr(value)}: not inside a Slurm job step "
                         "(run it with srun, as the script `tfdist job slurm` writes does)")
    return int(value)


@dataclass
class SlurmStep:
    """This task's place in a job step."""
    job_id: int
    step_id: int
    procid: int
    ntasks: int
    localid: int
    nodes: list[str]
    tasks_per_node: list[int]

    @classmethod
    def from_env(cls, env: Mapping[str, str]) -> "SlurmStep":
        nodelist = env.get("SLURM_STEP_NODELIST") or env.get("SLURM_JOB_NODELIST")
        counts = env.get("SLURM_STEP_TASKS_PER_NODE") or env.get("SLURM_TASKS_PER_NODE")
        if not nodelist or not counts:
            raise SlurmError("SLURM_STEP_NODELIST / SLURM_STEP_TASKS_PER_NODE are not set: not inside a Slurm job "
                             "step (run it with srun)")
        step = cls(job_id=_int(env, "SLURM_JOB_ID"), step_id=_int(env, "SLURM_STEP_ID"),
                   procid=_int(env, "SLURM_PROCID"), ntasks=_int(env, "SLURM_NTASKS"),
                   localid=_int(env, "SLURM_LOCALID"), nodes=expand_hostlist(nodelist),
                   tasks_per_node=expand_counts(counts))
        if len(step.nodes) != len(step.tasks_per_node):
            raise SlurmError(f"{len(step.nodes)} nodes ({nodelist}) but task counts for "
                             f"{len(step.tasks_per_node)} ({counts})")
        if sum(step.tasks_per_node) != step.ntasks:
            raise SlurmError(f"SLURM_NTASKS={step.ntasks} but the nodes have {sum(step.tasks_per_node)} tasks ({counts})")
        if not 0 <= step.procid < step.ntasks:
            raise SlurmError(f"SLURM_PROCID={step.procid} is not one of the step's {step.ntasks} tasks")
        return step

    def placement(self) -> list[tuple[str, int]]:
        """(node, local id) of every task in rank order: block distribution."""
        out = []
        for node, count in zip(self.nodes, self.tasks_per_node):
            out.extend((node, local) for local in range(count))
        return out


def port_base(job_id: int, step_id: int, width: int) -> int:
    """First port of a step's tasks on each node: ``width`` ports per job
    step (at least 16), the slot chosen from the job and step ids, so jobs
    and steps sharing a node (consecutive ids) get distinct ranges."""
    width = max(16, width)
    slots = (PORT_HIGH - PORT_LOW) // width
    return PORT_LOW + ((job_id * 7 + step_id) % slots) * width


def step_workers(env: Mapping[str, str]) -> list[launcher.Worker]:
    """Every task of the step as a tf.distribute worker (worker index =
    SLURM_PROCID); only this task's worker is ``local``."""
    step = SlurmStep.from_env(env)
    placed = step.placement()
    if env.get(PORT_ENV):
        if not env[PORT_ENV].isdigit():
            raise SlurmError(f"{PORT_ENV}={env[PORT_ENV]!r} is not a port")
        base = int(env[PORT_ENV])
    else:
        base = port_base(step.job_id, step.step_id, max(step.tasks_per_node))
    if base + max(step.tasks_per_node) > 65535:
        raise SlurmError(f"port {base} + {max(step.tasks_per_node)} tasks per node goes past 65535")
    if placed[step.procid][1] != step.localid:
        raise SlurmError(f"task {step.procid} runs as local task {step.localid} of its node, not as block "
                         "distribution places it: start the step with srun --distribution=block")
    cluster = [f"{node}:{base + local}" for node, local in placed]
    return [launcher.Worker(rank=i, host=node, port=base + local, tf_config=launcher.tf_config(cluster, i),
                            local=i == step.procid)
            for i, (node, local) in enumerate(placed)]


def horovod_hosts(env: Mapping[str, str]) -> tuple[int, str]:
    """(np, ``-H`` value) for one horovodrun launching every task of the
    allocation: ``node1:K,node2:K``."""
    nodelist = env.get("SLURM_JOB_NODELIST") or env.get("SLURM_NODELIST")
    counts = env.get("SLURM_TASKS_PER_NODE")
    if not nodelist or not counts:
        raise SlurmError("SLURM_JOB_NODELIST / SLURM_TASKS_PER_NODE are not set: not inside a Slurm job "
                         "(the batch script of `tfdist job slurm` runs tfdist there)")
    nodes, per_node = expand_hostlist(nodelist), expand_counts(counts)
    if len(nodes) != len(per_node):
        raise SlurmError(f"{len(nodes)} nodes ({nodelist}) but task counts for {len(per_node)} ({counts})")
    return sum(per_node), ",".join(f"{n}:{k}" for n, k in zip(nodes, per_node))


# --------------------------------------------------------------------------
# The sbatch script
# --------------------------------------------------------------------------

@dataclass
class JobSpec:
    script: str                      # the (converted) training script
    backend: str = "horovod"
    nodes: int = 1
    tasks_per_node: int = 1
    gpus_per_task: int = 0
    cpus_per_task: int | None = None
    time: str | None = None
    partition: str | None = None
    account: str | None = None
    job_name: str | None = None
    python: str = field(default_factory=lambda: sys.executable)
    setup: list[str] = field(default_factory=list)     # shell lines run before (module load ...)
    pythonpath: str | None = None    # where `import tfdist` comes from, when not from the interpreter's own packages
    workdir: str | None = None
    output: str | None = None        # the job's output file (default: <workdir>/<name>-%j.out)
    record: str | None = None        # tfdist run --record DIR
    timeout: float = 0.0             # tfdist run --timeout
    args: list[str] = field(default_factory=list)
    sbatch_extra: list[str] = field(default_factory=list)
    allow_unconverted: bool = False  # tfdist run --allow-unconverted in the job
    parameter_servers: int = 0       # a ParameterServerStrategy job: the last tasks are parameter servers

    @property
    def ntasks(self) -> int:
        return self.nodes * self.tasks_per_node

    @property
    def name(self) -> str:
        return self.job_name or Path(self.script).stem

    def problems(self) -> list[str]:
        """Every option that cannot make a job (nothing is written then)."""
        out = []
        if self.backend not in ("horovod", "tf-distribute"):
            out.append(f"--backend {self.backend!r}: horovod or tf-distribute")
        if self.nodes < 1:
            out.append(f"--nodes {self.nodes}: a job needs at least 1 node")
        if self.tasks_per_node < 1:
            out.append(f"--tasks-per-node {self.tasks_per_node}: each node needs at least 1 task (one per GPU, "
                       "or one per node on CPUs)")
        if self.gpus_per_task < 0:
            out.append(f"--gpus-per-task {self.gpus_per_task}: 0 (CPU) or more")
        if self.cpus_per_task is not None and self.cpus_per_task < 1:
            out.append(f"--cpus-per-task {self.cpus_per_task}: at least 1")
        if self.time is not None and not _TIME.match(self.time):
            out.append(f"--time {self.time!r}: Slurm's forms are MINUTES, MINUTES:SECONDS, HOURS:MINUTES:SECONDS, "
                       "DAYS-HOURS, DAYS-HOURS:MINUTES or DAYS-HOURS:MINUTES:SECONDS (e.g. 30, 2:00:00, 1-12)")
        for option, value in (("--partition", self.partition), ("--account", self.account),
                              ("--job-name", self.job_name)):
            if value is not None and not _NAME.match(value):
                out.append(f"{option} {value!r}: letters, digits and _ . + - only")
        if not os.path.isfile(self.script):
            out.append(f"no such script: {self.script}")
        if self.parameter_servers:
            if self.backend != "tf-distribute":
                out.append("--ps: parameter servers are tf.distribute's (ParameterServerStrategy)")
            if self.ntasks < self.parameter_servers + 2:
                out.append(f"--ps {self.parameter_servers}: the job's {self.ntasks} task(s) must hold a chief, at "
                           f"least one worker and the {self.parameter_servers} parameter server(s) "
                           f"(--nodes x --tasks-per-node >= {self.parameter_servers + 2})")
            if self.record or self.timeout:
                out.append("--record / --timeout: not for parameter-server jobs (tfdist run --slurm starts "
                           "MultiWorkerMirrored workers); leave them out")
        return out

    def run_command(self) -> list[str]:
        cmd = [self.python, "-m", "tfdist", "run", "--backend", self.backend, "--slurm"]
        if self.record:
            cmd += ["--record", self.record]
        if self.timeout:
            cmd += ["--timeout", f"{self.timeout:g}"]
        if self.allow_unconverted:
            cmd.append("--allow-unconverted")
        return cmd + [os.path.abspath(self.script), *self.args]


def _q(word: str) -> str:
    return shlex.quote(str(word))


def _directive(value) -> str:
    """A value of an ``#SBATCH`` line: sbatch reads these lines as words, so a
    value with a space or a quote is written in double quotes (its ``"`` and
    ``\\`` escaped)."""
    text = str(value)
    if text and re.fullmatch(r"[A-Za-z0-9_.,:/%+=@-]+", text):
        return text
    return '"' + text.replace("\\", "\\\\").replace('"', '\\"') + '"'


def sbatch_script(spec: JobSpec) -> str:
    """The commented batch script (bash) for ``spec``."""
    workdir = os.path.abspath(spec.workdir or os.getcwd())
    output = spec.output or os.path.join(workdir, f"{spec.name}-%j.out")
    lines = [
        "#!/bin/bash",
        f"# Written by `tfdist job slurm` for {os.path.basename(spec.script)} ({spec.backend} engine):",
        f"# {spec.nodes} node(s) x {spec.tasks_per_node} task(s) = {spec.ntasks} training process(es)"
        + (f" (a chief, {spec.ntasks - 1 - spec.parameter_servers} worker(s), {spec.parameter_servers} parameter "
           "server(s))." if spec.parameter_servers else "."),
        "# Submit with `sbatch FILE` (or `tfdist job slurm ... --submit --wait`).",
        f"#SBATCH --job-name={_directive(spec.name)}",
        f"#SBATCH --nodes={spec.nodes}",
        f"#SBATCH --ntasks-per-node={spec.tasks_per_node}",
    ]
    if spec.cpus_per_task:
        lines.append(f"#SBATCH --cpus-per-task={spec.cpus_per_task}")
    if spec.gpus_per_task:
        if spec.backend == "tf-distribute":
            lines.append("# one GPU set per task: Slurm sets each task's CUDA_VISIBLE_DEVICES")
            lines.append(f"#SBATCH --gpus-per-task={spec.gpus_per_task}")
        else:
            lines.append("# the tasks of a node share its GPUs: the converted script pins each rank to GPU")
            lines.append("# hvd.local_rank() (one GPU set per task would leave local rank 1 no GPU 1)")
            lines.append(f"#SBATCH --gpus-per-node={spec.gpus_per_task * spec.tasks_per_node}")
    if spec.time:
        lines.append(f"#SBATCH --time={_directive(spec.time)}")
    if spec.partition:
        lines.append(f"#SBATCH --partition={_directive(spec.partition)}")
    if spec.account:
        lines.append(f"#SBATCH --account={_directive(spec.account)}")
    lines += [f"#SBATCH --chdir={_directive(workdir)}", f"#SBATCH --output={_directive(output)}"]
    lines += [f"#SBATCH {x}" for x in spec.sbatch_extra]
    lines += ["", "set -euo pipefail", ""]
    lines.append("# The environment the job runs in: the interpreter that wrote this script (or --python),")
    lines.append("# with TensorFlow installed" + (" (the tasks need nothing else)." if slurm_tasks.carried(spec) else
                                                  " (and Horovod), and tfdist importable from it."))
    for line in spec.setup:
        lines.append(line)
    venv = _venv_of(spec.python)
    if venv and not spec.setup:
        lines.append(f"source {_q(os.path.join(venv, 'bin', 'activate'))}")
    lines.append(f"PYTHON={_q(spec.python)}")
    if spec.pythonpath:
        lines.append("# tfdist itself comes from a checkout, not from that interpreter's packages:")
        lines.append(f"export PYTHONPATH={_q(spec.pythonpath)}${{PYTHONPATH:+:$PYTHONPATH}}")
    lines += ["export PYTHONUNBUFFERED=1", ""]
    run = " ".join(['"$PYTHON"'] + [_q(w) for w in spec.run_command()[1:]])
    script_words = [_q(os.path.abspath(spec.script))] + [_q(a) for a in spec.args]
    if spec.parameter_servers:
        lines += slurm_tasks.parameter_server_lines(spec, script_words)
    elif spec.backend == "horovod":
        lines += slurm_tasks.horovod_lines(spec, script_words, run)
    elif slurm_tasks.carried(spec):
        lines += slurm_tasks.tf_distribute_lines(spec, script_words)
    else:
        lines += [
            "# One tf.distribute worker per task: tfdist run --slurm builds each task's TF_CONFIG from",
            "# SLURM_PROCID, SLURM_NTASKS and the step's nodes (worker 0 is the chief; ports from the job id).",
            "# --kill-on-bad-exit: a task that fails ends the others (they would wait for it forever);",
            "# srun then exits non-zero and so does the job.",
            f"srun --kill-on-bad-exit=1 --distribution=block --ntasks={spec.ntasks} {run}",
        ]
    return "\n".join(lines) + "\n"


def _venv_of(python: str) -> str | None:
    """The virtual environment ``python`` belongs to (its pyvenv.cfg), if any."""
    root = Path(python).parent.parent
    return str(root) if (root / "pyvenv.cfg").is_file() and (root / "bin" / "activate").is_file() else None


def tfdist_pythonpath_for(python: str) -> str | None:
    """The directory to put on the job's PYTHONPATH so ``python -m tfdist``
    runs the tfdist that wrote the script: None when ``python`` imports that
    same tfdist already (an installed package)."""
    src = launcher.tfdist_pythonpath()
    try:
        proc = subprocess.run([python, "-c", "import tfdist, os; print(os.path.dirname(os.path.dirname("
                               "os.path.realpath(tfdist.__file__))))"], capture_output=True, text=True, timeout=60,
                              env={k: v for k, v in os.environ.items() if k != "PYTHONPATH"})
        if proc.returncode == 0 and os.path.realpath(proc.stdout.strip()) == os.path.realpath(src):
            return None
    except (OSError, subprocess.SubprocessError):
        pass
    return src


# --------------------------------------------------------------------------
# Submitting and waiting
# --------------------------------------------------------------------------

@dataclass
class JobResult:
    job_id: str
    state: str
    exit_code: str          # Slurm's "STATUS:SIGNAL"
    output: str | None
    duration_s: float
    failed_task: int | None = None
    failed_status: int | None = None
    failed_lines: list[str] = field(default_factory=list)

    @property
    def returncode(self) -> int:
        status, _, signal = self.exit_code.partition(":")
        code = int(status) if status.isdigit() else 1
        if self.state == "COMPLETED" and code == 0:
            return 0
        if code:
            return code
        return 128 + int(signal) if signal.isdigit() and int(signal) else 1


def submit(path: str, env: Mapping[str, str] | None = None, sbatch: str = "sbatch") -> str:
    proc = subprocess.run([sbatch, "--parsable", path], capture_output=True, text=True, env=env, timeout=120)
    if proc.returncode != 0:
        raise SlurmError(f"sbatch failed (exit {proc.returncode}): {proc.stderr.strip() or proc.stdout.strip()}")
    return proc.stdout.strip().split(";")[0]


def job_info(job_id: str, env: Mapping[str, str] | None = None) -> dict[str, str]:
    proc = subprocess.run(["scontrol", "show", "job", "-o", job_id], capture_output=True, text=True, env=env,
                          timeout=60)
    if proc.returncode != 0:
        return {}
    return parse_job_info(proc.stdout)


def parse_job_info(text: str) -> dict[str, str]:
    """``scontrol show job -o``'s Key=Value fields; a value runs to the next
    `` Key=`` (a path with spaces, ``StdOut=/tmp/my dir/k s-7.out``, stays whole)."""
    info: dict[str, str] = {}
    for m in re.finditer(r"(?:^|\s)([A-Za-z][A-Za-z0-9_:/]*)=(.*?)(?=\s+[A-Za-z][A-Za-z0-9_:/]*=|\s*$)",
                         text.strip()):
        info.setdefault(m.group(1), m.group(2))
    return info


def wait(job_id: str, env: Mapping[str, str] | None = None, sink: Callable[[str], None] | None = None,
         timeout: float | None = None, poll: float = 0.5) -> JobResult:
    """Wait for the job to end, streaming its output file to ``sink``."""
    start = time.monotonic()
    output = None
    offset = 0
    info: dict[str, str] = {}
    missing = 0

    def pump():
        nonlocal offset
        if not output or not os.path.exists(output):
            return
        with open(output, "rb") as fh:
            fh.seek(offset)
            data = fh.read()
        cut = data.rfind(b"\n") + 1
        if cut and sink:
            sink(data[:cut].decode("utf-8", "replace"))
        offset += cut

    while True:
        info = job_info(job_id, env) or info
        if not info:
            missing += 1
            if missing > 20:
                raise SlurmError(f"scontrol does not know job {job_id}")
        if info.get("StdOut") and output is None:
            output = info["StdOut"]
        pump()
        state = info.get("JobState", "")
        if state in TERMINAL_STATES:
            break
        if timeout and time.monotonic() - start > timeout:
            subprocess.run(["scancel", job_id], env=env, capture_output=True, timeout=60)
            raise TimeoutError(f"job {job_id} still {state or 'pending'} after {timeout:g}s: cancelled it")
        time.sleep(poll)
    time.sleep(0.3)
    pump()
    if output and os.path.exists(output) and sink:
        with open(output, "rb") as fh:
            fh.seek(offset)
            rest = fh.read().decode("utf-8", "replace")
        if rest:
            sink(rest if rest.endswith("\n") else rest + "\n")
    result = JobResult(job_id=job_id, state=info.get("JobState", "UNKNOWN"), exit_code=info.get("ExitCode", "1:0"),
                       output=output, duration_s=time.monotonic() - start)
    if result.returncode != 0 and output and os.path.exists(output):
        result.failed_task, result.failed_status, result.failed_lines = failed_task(
            Path(output).read_text(errors="replace"))
    return result


_PREFIX = re.compile(r"^\[(\d+)\]<(stdout|stderr)>:(.*)$")
_FAILED = (re.compile(r"worker (\d+) exited (\d+)"), re.compile(r"[Pp]rocess (\d+) exit with status code (\d+)"),
           re.compile(r"srun: error: .*?: tasks? (\d+)(?:-\d+)?: Exited with exit code (\d+)"))
#: ``srun --label``: "<task>: <line>" (the tasks of a batch script carrying their own code)
_LABEL = re.compile(r"^\s*(\d+): (.*)$")


def failed_task(text: str, lines: int = 12) -> tuple[int | None, int | None, list[str]]:
    """The task that failed first, its exit status when the launcher said it,
    and its last error lines (its last traceback, else its last stderr lines)."""
    task = status = None
    for line in text.splitlines():
        for pattern in _FAILED:
            m = pattern.search(line)
            if m and m.group(2) != "0":
                task, status = int(m.group(1)), int(m.group(2))
                break
        if task is not None:
            break
    per_task: dict[int, list[str]] = {}
    for line in text.splitlines():
        m = _PREFIX.match(line)
        if m and m.group(2) == "stderr":
            per_task.setdefault(int(m.group(1)), []).append(line)
        elif not m and _LABEL.match(line):
            per_task.setdefault(int(_LABEL.match(line).group(1)), []).append(line)
    if task is None:
        with_traceback = [t for t, ls in per_task.items() if any("Traceback" in x for x in ls)]
        task = min(with_traceback) if with_traceback else None
    if task is None:
        return None, None, text.splitlines()[-lines:]
    own = per_task.get(task, [])
    starts = [i for i, x in enumerate(own) if "Traceback (most recent call last)" in x]
    if starts:
        tb = own[starts[-1]:]
        return task, status, (tb[:1] + ["..."] + tb[-(lines - 2):] if len(tb) > lines else tb)
    return task, status, own[-lines:]


def describe(result: JobResult) -> str:
    head = (f"Slurm job {result.job_id} {result.state} (exit code {result.exit_code}) after "
            f"{result.duration_s:.0f}s" + (f"; output: {result.output}" if result.output else ""))
    if result.returncode == 0:
        return head
    if result.failed_task is not None:
        status = f" (exit {result.failed_status})" if result.failed_status is not None else ""
        return (head + f"\ntask {result.failed_task} failed{status}:\n"
                + "\n".join("  " + x for x in result.failed_lines))
    return head + ("\nlast lines of the output:\n" + "\n".join("  " + x for x in result.failed_lines)
                   if result.failed_lines else "")
