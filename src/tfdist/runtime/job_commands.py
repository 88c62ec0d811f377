"""``tfdist job slurm`` and ``tfdist job kubernetes`` (dispatched from tfdist.cli):
past one machine, on the schedulers clusters already have."""
from __future__ import annotations

import argparse
import os
import shutil
import sys
from typing import List, Optional

from . import kubernetes, launcher, ps_launcher, slurm, slurm_tasks
from .command_line import (ALLOW_UNCONVERTED_HELP, BACKENDS, EXIT_BAD_INPUT, EXIT_OK, Parser, err, script_engine,
                           write_text_atomic)

JOB_DESCRIPTION = """\
Run a converted script on a cluster scheduler:

  tfdist job slurm train_dist.py --nodes 2 --tasks-per-node 4 --submit --wait
  tfdist job kubernetes train_dist.py --workers 4 --image my/image:tag

The engine is read from the script (a Horovod or a tf.distribute conversion);
--backend says it when the script does not show it."""

SLURM_DESCRIPTION = """\
Write a commented sbatch script that runs SCRIPT (a converted script) on
NODES x TASKS-PER-NODE processes, and with --submit submit it (sbatch);
--wait then follows the job, streams its output, and reports its result
(exit status: the job's; a failed task's error is shown).

Every process is a Slurm task started by srun (--distribution=block,
--kill-on-bad-exit: a task that fails ends the job):
  tf-distribute: one MultiWorkerMirroredStrategy worker per task, its
    TF_CONFIG built from SLURM_PROCID and the job's nodes (ports from the job
    id, so jobs sharing a node do not collide);
  horovod: one Horovod rank per task, its HOROVOD_* variables from the same,
    with Horovod's Gloo rendezvous started by the batch script on the first
    node (no horovodrun, no ssh between nodes);
  tf-distribute with --ps P (a script converted with --strategy
    parameter-server): task 0 the chief, the last P tasks parameter servers,
    the others workers, which serve until the chief has ended.
The batch script carries the few lines of standard-library Python each task
runs, so the job needs TensorFlow (and Horovod), not tfdist. --record and
--timeout are tfdist's own: with them each task runs `tfdist run --slurm`,
which needs tfdist in the job.

The job runs in the environment of --python (default: the interpreter running
tfdist; its virtual environment is activated), or after --setup lines (e.g.
"module load tensorflow"); when tfdist runs in the job and that interpreter
would not import this same tfdist (a checkout on PYTHONPATH), the script puts
it on the job's PYTHONPATH."""

KUBE_DESCRIPTION = """\
Write the Kubernetes manifest that runs SCRIPT (a converted script, at
--workdir inside --image) on --workers pods:

  Kubeflow Trainer v2 (default, --api v2): a TrainJob and the TrainingRuntime it
    runs on (trainer.kubeflow.org/v1alpha1). tf-distribute: one
    MultiWorkerMirroredStrategy worker per pod (a few lines of Python in its
    command write its TF_CONFIG; the image needs TensorFlow, not tfdist).
    horovod: the MPI policy as upstream's MPI runtimes set it (the launcher
    runs mpirun and ranks of its own; Horovod built with MPI in the image).
  Training Operator v1 (--api v1): a TFJob (tf-distribute; the operator writes
    TF_CONFIG) or an MPIJob (horovod) of kubeflow.org/v1.

The manifest's header says what the cluster and the image must have.
Nothing is applied: `kubectl apply -f FILE` does that."""

SLURM_EPILOG = """Options may come before or after SCRIPT; the script's own arguments go after --
  (tfdist job slurm train.py --nodes 2 -- --epochs 10).

exit status: 0 written (and, with --wait, the job succeeded); the job's own
  non-zero status when it failed; 3 bad options (nothing written)."""

KUBE_EPILOG = """Options may come before or after SCRIPT; the script's own arguments go after --
  (tfdist job kubernetes train.py --workers 4 --image my/image:tag -- --epochs 10).

exit status: 0 written; 3 bad options (nothing written)."""


def build_parser() -> argparse.ArgumentParser:
    p = Parser(prog="tfdist job", description=JOB_DESCRIPTION, formatter_class=argparse.RawDescriptionHelpFormatter)
    sub = p.add_subparsers(dest="scheduler", metavar="SCHEDULER", parser_class=Parser)
    s = sub.add_parser("slurm", help="write (and submit) an sbatch script", description=SLURM_DESCRIPTION,
                       epilog=SLURM_EPILOG, formatter_class=argparse.RawDescriptionHelpFormatter)
    s.add_argument("--backend", choices=BACKENDS, help="the engine (default: read from the script)")
    s.add_argument("--nodes", type=int, default=1, metavar="N", help="nodes (default: 1)")
    s.add_argument("--tasks-per-node", type=int, default=1, metavar="K",
                   help="training processes per node (default: 1; one per GPU)")
    s.add_argument("--gpus-per-task", type=int, default=0, metavar="G", help="GPUs per process (default: 0, CPU)")
    s.add_argument("--cpus-per-task", type=int, metavar="C", help="CPUs per process")
    s.add_argument("--time", metavar="TIME", help="time limit (Slurm's forms: 30, 2:00:00, 1-12, ...)")
    s.add_argument("--partition", metavar="NAME")
    s.add_argument("--account", metavar="NAME")
    s.add_argument("--job-name", metavar="NAME", help="default: the script's name")
    s.add_argument("--ps", type=int, default=0, metavar="P",
                   help="a script converted with --strategy parameter-server: the last P tasks are parameter "
                        "servers, task 0 the chief, the others workers")
    s.add_argument("--sbatch-option", action="append", default=[], metavar="OPT",
                   help="another #SBATCH line, e.g. --sbatch-option=--mem=16G (repeatable)")
    s.add_argument("--python", metavar="PYTHON",
                   help="interpreter of the job (default: the one running tfdist, its venv activated)")
    s.add_argument("--setup", action="append", default=[], metavar="LINE",
                   help="a shell line run before training instead of activating --python's venv, e.g. "
                        "\"module load tensorflow\" (repeatable)")
    s.add_argument("--workdir", metavar="DIR", help="the job's working directory (default: the current one)")
    s.add_argument("--log", metavar="FILE", help="the job's output file (default: WORKDIR/NAME-%%j.out)")
    s.add_argument("--record", metavar="DIR",
                   help="run every process under verify's probe: DIR/rank-<R>.json says what each did")
    s.add_argument("--timeout", type=float, default=0.0, metavar="S",
                   help="tfdist run --timeout inside the job (default: none; see also --time)")
    s.add_argument("-o", "--output", metavar="FILE", help="the sbatch script (default: NAME.sbatch; - for stdout)")
    s.add_argument("--submit", action="store_true", help="submit it with sbatch")
    s.add_argument("--wait", action="store_true", help="with --submit: wait for the job and report its result")
    s.add_argument("--wait-timeout", type=float, default=0.0, metavar="S",
                   help="with --wait: cancel the job after S seconds (default: no limit)")
    s.add_argument("--allow-unconverted", action="store_true", help=ALLOW_UNCONVERTED_HELP)
    s.add_argument("script", metavar="SCRIPT", help="the converted training script")
    k = sub.add_parser("kubernetes", help="write a Kubeflow TrainJob (or v1 TFJob / MPIJob) manifest",
                       description=KUBE_DESCRIPTION, epilog=KUBE_EPILOG, formatter_class=argparse.RawDescriptionHelpFormatter)
    k.add_argument("--backend", choices=BACKENDS, help="the engine (default: read from the script)")
    k.add_argument("--workers", type=int, required=True, metavar="N", help="worker pods")
    k.add_argument("--image", metavar="IMAGE", help="container image with TensorFlow and the script (required)")
    k.add_argument("--api", choices=("v2", "v1"), default="v2",
                   help="v2: Kubeflow Trainer TrainJob (default); v1: Training Operator TFJob / MPIJob")
    k.add_argument("--name", metavar="NAME", help="the job's name (default: from the script's)")
    k.add_argument("--namespace", metavar="NS")
    k.add_argument("--procs-per-worker", type=int, default=1, metavar="P",
                   help="horovod: MPI processes per pod (one per GPU; default 1)")
    k.add_argument("--gpus-per-worker", type=int, default=0, metavar="G",
                   help="GPUs per process (horovod) or per pod (tf-distribute); default 0")
    k.add_argument("--cpu", metavar="Q", help="CPU limit per pod, e.g. 4")
    k.add_argument("--memory", metavar="Q", help="memory limit per pod, e.g. 16Gi")
    k.add_argument("--ps", type=int, default=0, metavar="P",
                   help="a script converted with --strategy parameter-server: P PS replicas beside a Chief and "
                        "the --workers Worker replicas (a TFJob: --api v1)")
    k.add_argument("--workdir", default="/workspace", metavar="DIR",
                   help="where the script is inside the image (default: /workspace)")
    k.add_argument("-o", "--output", metavar="FILE",
                   help="the manifest (default: NAME-trainjob.yaml, NAME-tfjob.yaml or NAME-mpijob.yaml; - for stdout)")
    k.add_argument("--allow-unconverted", action="store_true", help=ALLOW_UNCONVERTED_HELP)
    k.add_argument("script", metavar="SCRIPT", help="the converted training script")
    return p


def _backend(prog: str, args) -> str | None:
    processes = (f"the job's {args.nodes * args.tasks_per_node} processes" if args.scheduler == "slurm"
                 else f"the {args.workers} pods")
    ok, found = script_engine(prog, args.script, args.backend, args.allow_unconverted, processes)
    if not ok:
        return None
    parameter_servers = getattr(args, "ps", 0) or 0
    if ps_launcher.builds_parameter_servers(args.script):
        if parameter_servers < 1:
            err(prog, f"{args.script} builds a ParameterServerStrategy: say how many parameter servers with --ps P "
                      + ("(of the job's tasks: task 0 is the chief, the others workers)" if args.scheduler == "slurm"
                         else "(a TFJob with a Chief, --workers Worker and P PS replicas; --api v1)"))
            return None
    elif parameter_servers:
        err(prog, f"--ps {parameter_servers}: {args.script} builds no ParameterServerStrategy (convert it with "
                  "--strategy parameter-server)")
        return None
    if not (args.backend or found):
        err(prog, f"{args.script} shows no engine: say which with --backend (with --allow-unconverted)")
        return None
    return args.backend or found


def main(argv: Optional[List[str]] = None) -> int:
    parser = build_parser()
    argv = list(sys.argv[1:] if argv is None else argv)
    tail: List[str] = []
    if "--" in argv:      # the script's own arguments
        cut = argv.index("--")
        argv, tail = argv[:cut], argv[cut + 1:]
    args = parser.parse_args(argv)
    args.args = tail
    if args.scheduler is None:
        parser.print_help()
        return EXIT_BAD_INPUT
    prog = f"tfdist job {args.scheduler}"
    if not os.path.isfile(args.script):
        err(prog, f"no such script: {args.script}")
        return EXIT_BAD_INPUT
    backend = _backend(prog, args)
    if backend is None:
        return EXIT_BAD_INPUT
    return (slurm_main if args.scheduler == "slurm" else kubernetes_main)(prog, args, backend)


def slurm_main(prog: str, args, backend: str) -> int:
    python = args.python or sys.executable
    spec = slurm.JobSpec(script=args.script, backend=backend, nodes=args.nodes, tasks_per_node=args.tasks_per_node,
                         gpus_per_task=args.gpus_per_task, cpus_per_task=args.cpus_per_task, time=args.time,
                         partition=args.partition, account=args.account, job_name=args.job_name, python=python,
                         setup=args.setup, workdir=args.workdir, output=os.path.abspath(args.log) if args.log else None,
                         record=os.path.abspath(args.record) if args.record else None, timeout=args.timeout,
                         args=list(args.args), sbatch_extra=args.sbatch_option,
                         allow_unconverted=args.allow_unconverted, parameter_servers=args.ps)
    problems = spec.problems()
    if args.wait and not args.submit:
        problems.append("--wait goes with --submit")
    if args.submit and args.output == "-":
        problems.append("--submit needs the script in a file: -o FILE, not -o -")
    if args.python and not (os.path.isfile(python) and os.access(python, os.X_OK)):
        problems.append(f"--python {python}: not an executable file")
    if args.workdir and not os.path.isdir(args.workdir):
        problems.append(f"--workdir {args.workdir}: no such directory")
    if args.timeout < 0 or args.wait_timeout < 0:
        problems.append("--timeout / --wait-timeout: seconds >= 0")
    if args.submit and shutil.which("sbatch") is None:
        problems.append("--submit: sbatch not found (is this a Slurm login node?); write the script without "
                        "--submit and submit it where Slurm is")
    if problems:
        for problem in problems:
            err(prog, problem)
        sys.stderr.write(f"{prog}: nothing written\n")
        return EXIT_BAD_INPUT
    spec.pythonpath = None if slurm_tasks.carried(spec) else slurm.tfdist_pythonpath_for(python)
    text = slurm.sbatch_script(spec)
    if args.output == "-":
        sys.stdout.write(text)
        return EXIT_OK
    path = os.path.abspath(args.output or f"{spec.name}.sbatch")
    write_text_atomic(path, text)
    os.chmod(path, 0o755)
    sys.stderr.write(f"{prog}: wrote {path} ({spec.ntasks} {backend} process(es) on {spec.nodes} node(s))\n")
    if not args.submit:
        sys.stderr.write(f"{prog}: submit it with: sbatch {path}\n")
        return EXIT_OK
    try:
        job_id = slurm.submit(path)
    except slurm.SlurmError as exc:
        err(prog, str(exc))
        return 1
    print(f"Submitted Slurm job {job_id}", flush=True)
    if not args.wait:
        return EXIT_OK
    try:
        result = slurm.wait(job_id, sink=launcher.stream_to(sys.stdout), timeout=args.wait_timeout or None)
    except (slurm.SlurmError, TimeoutError) as exc:
        err(prog, str(exc))
        return 1
    except KeyboardInterrupt:
        err(prog, f"stopped waiting; job {job_id} keeps running (scancel {job_id} ends it)")
        return launcher.EXIT_INTERRUPTED
    report = slurm.describe(result)
    (sys.stdout if result.returncode == 0 else sys.stderr).write(f"{prog}: {report}\n")
    return result.returncode


def kubernetes_main(prog: str, args, backend: str) -> int:
    spec = kubernetes.KubeSpec(script=args.script, image=args.image, workers=args.workers, backend=backend,
                               api=args.api, name=args.name, namespace=args.namespace,
                               procs_per_worker=args.procs_per_worker, gpus_per_worker=args.gpus_per_worker,
                               cpu=args.cpu, memory=args.memory, workdir=args.workdir, args=list(args.args),
                               allow_unconverted=args.allow_unconverted, parameter_servers=args.ps)
    problems = spec.problems()
    if problems:
        for problem in problems:
            err(prog, problem)
        sys.stderr.write(f"{prog}: nothing written\n")
        return EXIT_BAD_INPUT
    docs = kubernetes.manifests(spec)
    text = kubernetes.to_yaml(docs, kubernetes.requirements(spec))
    if args.output == "-":
        sys.stdout.write(text)
        return EXIT_OK
    kind = docs[-1]["kind"].lower()
    path = os.path.abspath(args.output or f"{spec.job_name}-{kind}.yaml")
    write_text_atomic(path, text)
    sys.stderr.write(f"{prog}: wrote {path} ({' + '.join(d['kind'] for d in docs)}, {docs[-1]['apiVersion']}; "
                     f"{spec.workers} worker(s)); apply it with: kubectl apply -f {path}\n")
    return EXIT_OK
