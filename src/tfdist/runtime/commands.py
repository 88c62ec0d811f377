"""``tfdist run`` (dispatched from tfdist.cli), and ``python -m
tfdist.runtime.commands {run,verify}``; ``tfdist verify`` itself is
tfdist.runtime.verify_command (its names are importable from here too)."""
from __future__ import annotations

import argparse
import os
import signal
import sys
import threading
from typing import List, Optional

from . import launcher, ps_launcher, slurm, slurm_tasks
from .command_line import (ALLOW_UNCONVERTED_HELP, BACKENDS, EXIT_BAD_INPUT, EXIT_FAIL, EXIT_OK, Parser,  # noqa: F401
                           err, optional_remainder, port, positive_float, positive_int, script_engine)
from .kubernetes import jobset_workers
from .probe.state import ADDED_PATH_ENV, ORIG_PYTHONPATH_ENV, PROBE_DIR_ENV
from .verify_command import build_verify_parser, parse_verify_args, verify_main  # noqa: F401


RUN_DESCRIPTION = """\
Launch a (converted) training script on N processes and stream its output,
every line prefixed with the rank, e.g. "[1]<stdout>:epoch 1 ...".

--backend horovod (default): under horovodrun (Gloo on localhost by default).
If one rank fails, horovodrun terminates the others and tfdist exits non-zero.

--backend tf-distribute: tfdist starts N workers itself, each with its own
TF_CONFIG ({"cluster": {"worker": [...]}, "task": {"type": "worker",
"index": RANK}}), for scripts that build a tf.distribute
MultiWorkerMirroredStrategy; worker 0 is the chief.  On one host the workers
listen on free localhost ports.  With several hosts (-H host1:2,host2:2)
worker i listens on --port + i, and tfdist starts ONLY THE WORKERS
OF THE MACHINE IT RUNS ON (the host in -H that names this machine, or
--this-host): run the same command on every host, adding --this-host NAME
where the name in -H is not this machine's own.  tfdist does not log in to
other hosts.  If one worker exits non-zero, tfdist kills the others on this
machine (they would wait forever for it) and exits with its status.

Inside a Slurm job (--slurm, or no -np while SLURM_JOB_ID is set) the job
says where every process goes.  tf-distribute: run under srun, one tfdist
run per task (`srun --distribution=block tfdist run --backend tf-distribute
train.py`); each task starts ONE worker whose TF_CONFIG lists all the
step's tasks (worker index SLURM_PROCID, ports chosen from the job id so
jobs sharing a node do not collide).  horovod: under srun in the batch
script `tfdist job slurm` writes (which starts Horovod's Gloo rendezvous
first), each task is ONE rank, its HOROVOD_* variables from SLURM_PROCID and
the job's nodes; run once in a batch script without that rendezvous, tfdist
starts horovodrun with -np SLURM_NTASKS and -H the allocation's nodes.

--record DIR runs every process under verify's probe and leaves what each
rank did in DIR/rank-<R>.json (optimizer steps, a hash of the final trainable
variables, the files it wrote), to check a cluster run as verify checks one
on this machine.

--strategy parameter-server -np W --ps P (a script converted with tfdist
convert --strategy parameter-server; the default for a script that builds a
ParameterServerStrategy): a chief, W workers and P parameter servers on this
machine, each with its TF_CONFIG ({"cluster": {"chief": [...], "worker":
[...], "ps": [...]}, "task": {"type": "worker", "index": 1}}) on a free
localhost port, every line prefixed with its task ("[worker:1]<stdout>:").
The chief runs the script; workers and parameter servers serve it until it
ends, then tfdist stops them: the chief's exit status is the run's (a worker
or parameter server that dies first ends the run with its status).

If the whole job is still running after --timeout seconds, tfdist kills it
(every rank and their children) and exits 124."""

RUN_EPILOG = """\
exit status: the job's (0 when every rank succeeded, non-zero if any failed),
  124 on timeout, 130 when interrupted, 3 when horovodrun is not installed
  (--backend horovod), SCRIPT does not exist or -H cannot be used.

Everything after SCRIPT is passed to the script, so tfdist options go before it:
  tfdist run -np 4 --timeout 3600 train.py --epochs 10
  tfdist run --backend tf-distribute -np 2 train_dist.py --epochs 10"""


def build_run_parser() -> argparse.ArgumentParser:
    p = Parser(prog="tfdist run", description=RUN_DESCRIPTION, epilog=RUN_EPILOG,
                formatter_class=argparse.RawDescriptionHelpFormatter,
                usage="tfdist run [--backend {horovod,tf-distribute}] (-np N [-H HOSTS] | --slurm) [--gloo | --mpi] "
                      "[--strategy {mirrored,parameter-server} [--ps P]] "
                      "[--this-host HOST] [--port PORT] [--timeout SECONDS] [--python PYTHON] [--record DIR] "
                      "[--allow-unconverted] SCRIPT [ARGS...]")
    p.add_argument("--backend", choices=BACKENDS,
                   help="horovod: launch with horovodrun; tf-distribute: start N TF_CONFIG workers (default: the "
                        "engine the script was converted for)")
    p.add_argument("--allow-unconverted", action="store_true", help=ALLOW_UNCONVERTED_HELP)
    p.add_argument("-np", "--num-proc", dest="np", type=positive_int, metavar="N",
                   help="number of processes (ranks); required outside a Slurm job")
    p.add_argument("--slurm", action="store_true",
                   help="take the processes from the Slurm job this runs in (the default when -np is not "
                        "given and SLURM_JOB_ID is set; see above)")
    p.add_argument("--jobset", action="store_true",
                   help="tf-distribute in a pod of the Kubeflow Trainer v2 job `tfdist job kubernetes` writes: "
                        "this pod is worker JOB_COMPLETION_INDEX of -np N, worker i at "
                        "<JOBSET_NAME>-node-0-<i>.<JOBSET_NAME>:--port (default 2222)")
    p.add_argument("--strategy", choices=("mirrored", ps_launcher.PARAMETER_SERVER),
                   help="tf-distribute: parameter-server starts a chief, -np workers and --ps parameter servers "
                        "(default: parameter-server for a script that builds a ParameterServerStrategy)")
    p.add_argument("--ps", type=positive_int, default=None, metavar="P",
                   help="with --strategy parameter-server: the number of parameter servers (default 1)")
    p.add_argument("--record", metavar="DIR",
                   help="run every process under verify's probe; each rank's record goes to DIR/rank-<R>.json")
    p.add_argument("-H", "--hosts", metavar="HOSTS",
                   help='hosts and slots, e.g. "host1:4,host2:4" (default: localhost:N); tf-distribute starts '
                        "only this machine's workers (see above)")
    mode = p.add_mutually_exclusive_group()
    mode.add_argument("--gloo", dest="mpi", action="store_false", help="horovod: use Gloo (default)")
    mode.add_argument("--mpi", dest="mpi", action="store_true",
                      help="horovod: use MPI (needs Horovod built with MPI)")
    p.set_defaults(mpi=False)
    p.add_argument("--this-host", metavar="HOST",
                   help="tf-distribute with several hosts: which host of -H this machine is "
                        "(default: the one whose name is this machine's)")
    p.add_argument("--port", type=port, metavar="PORT",
                   help="tf-distribute: worker i listens on PORT + i "
                        f"(default: free ports on one host, {launcher.DEFAULT_BASE_PORT} with several hosts)")
    p.add_argument("--timeout", type=positive_float, default=0.0, metavar="SECONDS",
                   help="kill the whole job after this many seconds and exit 124 "
                        "(default: 0 = no limit, since real training runs take hours; a rank "
                        "that dies ends the whole job anyway - set it to bound a possible deadlock)")
    p.add_argument("--python", metavar="PYTHON",
                   help="interpreter for the ranks (default: the one horovodrun is installed for; "
                        "tf-distribute: the one running tfdist)")
    p.add_argument("script", metavar="SCRIPT", help="the training script")
    optional_remainder(p.add_argument("args", nargs=argparse.REMAINDER, metavar="ARGS",
                                       help="arguments for the script"))
    return p


class Terminated(BaseException):
    """SIGTERM (scancel, a Slurm time limit, srun ending a step whose other
    task failed): the launcher's cleanup kills the job's processes, which run
    in sessions of their own and would otherwise outlive tfdist."""


def _terminate(signum, frame):
    raise Terminated()


def run_main(argv: Optional[List[str]] = None) -> int:
    parser = build_run_parser()
    args = parser.parse_args(list(sys.argv[1:] if argv is None else argv))
    prog = parser.prog
    previous = signal.signal(signal.SIGTERM, _terminate) if _main_thread() else None
    try:
        return _run(prog, args)
    except Terminated:
        err(prog, "terminated (SIGTERM); the job's processes were killed")
        return 128 + signal.SIGTERM
    finally:
        if previous is not None:
            signal.signal(signal.SIGTERM, previous)


def _main_thread() -> bool:
    return threading.current_thread() is threading.main_thread()


def _run(prog: str, args) -> int:
    if not os.path.isfile(args.script):
        err(prog, f"no such script: {args.script}")
        return EXIT_BAD_INPUT
    env = dict(os.environ)
    env.setdefault("PYTHONUNBUFFERED", "1")
    ok, found = script_engine(prog, args.script, args.backend, args.allow_unconverted,
                              f"the {args.np} processes" if args.np else "the job's processes")
    if not ok:
        return EXIT_BAD_INPUT
    routed = _parameter_servers(prog, args, env)
    if routed is not None:
        return routed
    args.backend = args.backend or found or "horovod"
    args.slurm = args.slurm or (args.np is None and slurm.in_job(env))
    if args.np is None and not args.slurm:
        err(prog, "-np N is required (outside a Slurm job; inside one, --slurm takes the job's tasks)")
        return EXIT_BAD_INPUT
    if args.jobset and (args.slurm or args.backend != "tf-distribute" or args.np is None or args.hosts):
        err(prog, "--jobset goes with --backend tf-distribute and -np N, without --slurm or -H")
        return EXIT_BAD_INPUT
    if args.slurm:
        for option, value in (("-H", args.hosts), ("--this-host", args.this_host), ("--port", args.port)):
            if value is not None:
                err(prog, f"{option} is not for --slurm: the Slurm job says where the processes run")
                return EXIT_BAD_INPUT
    args.script_command = [args.script, *args.args]
    if args.record:
        args.script_command, env = _recorded(args.record, args.script_command, env)
    if args.backend == "tf-distribute":
        return _run_tf_distribute(prog, args, env)
    for option, value in (("--this-host", args.this_host), ("--port", args.port)):
        if value is not None:
            err(prog, f"{option} is for --backend tf-distribute")
            return EXIT_BAD_INPUT
    if args.slurm and slurm.in_step(env) and env.get("HOROVOD_GLOO_RENDEZVOUS_ADDR"):
        return _run_horovod_rank(prog, args, env)
    horovodrun = launcher.find_horovodrun()
    if horovodrun is None:
        err(prog, str(launcher.RuntimeMissing()))
        return EXIT_BAD_INPUT
    python = args.python or launcher.python_for(horovodrun)
    hosts, np = args.hosts, args.np
    if args.slurm:
        if slurm.in_step(env) and env.get("SLURM_NTASKS", "1") != "1":
            err(prog, f"under srun with {env['SLURM_NTASKS']} tasks every task would start its own horovodrun: "
                       "run `tfdist run --backend horovod --slurm` once, in the batch script (not under srun)")
            return EXIT_BAD_INPUT
        try:
            slurm_np, hosts = slurm.horovod_hosts(env)
        except slurm.SlurmError as exc:
            err(prog, str(exc))
            return EXIT_BAD_INPUT
        if np is not None and np != slurm_np:
            err(prog, f"-np {np} but the Slurm job has {slurm_np} tasks")
            return EXIT_BAD_INPUT
        np = slurm_np
        sys.stderr.write(f"{prog}: Slurm job {env.get('SLURM_JOB_ID')}: horovodrun -np {np} -H {hosts}\n")
        sys.stderr.flush()
    command = launcher.horovodrun_command(np, [python, *args.script_command], horovodrun=horovodrun,
                                          hosts=hosts, mpi=args.mpi)
    try:
        result = launcher.execute(command, timeout=args.timeout or None, env=env,
                                  sink=launcher.stream_to(sys.stdout))
    except KeyboardInterrupt:
        err(prog, "interrupted; the job was killed")
        return launcher.EXIT_INTERRUPTED
    except OSError as exc:
        err(prog, f"could not start {horovodrun}: {exc}")
        return EXIT_BAD_INPUT
    if result.timed_out:
        err(prog, f"timed out after {args.timeout:g}s; killed the job "
                   f"({len(result.killed_pids) or 1} process(es)) - raise --timeout if it needs longer")
        return launcher.EXIT_TIMEOUT
    if result.returncode != 0:
        sys.stderr.write(f"{prog}: the job failed (horovodrun exit status {result.returncode}); "
                         "see the rank-prefixed output above\n")
    return result.returncode


def _parameter_servers(prog: str, args, env: dict) -> Optional[int]:
    """--strategy parameter-server (the default for a script that builds a
    ParameterServerStrategy): the cluster's exit status; None for the others."""
    if args.strategy is None and ps_launcher.builds_parameter_servers(args.script):
        args.strategy = ps_launcher.PARAMETER_SERVER
    if args.strategy == ps_launcher.PARAMETER_SERVER:
        if not ps_launcher.check(prog, args):
            return EXIT_BAD_INPUT
        args.ps, args.script_command = args.ps or 1, [args.script, *args.args]
        return ps_launcher.run(prog, args, env)
    if args.ps is not None:
        err(prog, "--ps P goes with --strategy parameter-server")
        return EXIT_BAD_INPUT
    return None


def _run_horovod_rank(prog: str, args, env: dict) -> int:
    """Under srun, in the batch script `tfdist job slurm` writes: this task is
    ONE Horovod rank (its HOROVOD_* variables from the task's SLURM_*; the
    batch script started the Gloo rendezvous), run here with its output
    prefixed as horovodrun prefixes it."""
    try:
        rank_env = slurm_tasks.horovod_rank_env(env)
    except (SystemExit, KeyError, ValueError) as exc:
        err(prog, f"this Slurm task cannot be a Horovod rank: {exc}")
        return EXIT_BAD_INPUT
    env.update(rank_env)
    rank = int(rank_env["HOROVOD_RANK"])
    worker = launcher.Worker(rank=rank, host=rank_env["HOROVOD_HOSTNAME"], port=0, tf_config=None)
    try:
        result = launcher.execute_workers([worker], [args.python or sys.executable, *args.script_command],
                                          timeout=args.timeout or None, env=env, sink=launcher.stream_to(sys.stdout))
    except KeyboardInterrupt:
        err(prog, "interrupted; the rank was killed")
        return launcher.EXIT_INTERRUPTED
    if result.timed_out:
        err(prog, f"timed out after {args.timeout:g}s; rank {rank} was killed")
    return result.returncode


def _recorded(directory: str, script_command: List[str], env: dict) -> tuple[List[str], dict]:
    """The script run under verify's probe, recording into ``directory``."""
    directory = os.path.abspath(directory)
    os.makedirs(directory, exist_ok=True)
    src = launcher.tfdist_pythonpath()
    original = env.get("PYTHONPATH", "")
    env = launcher.with_pythonpath(env, [src])
    env[ADDED_PATH_ENV], env[ORIG_PYTHONPATH_ENV], env[PROBE_DIR_ENV] = src, original, directory
    return ["-m", "tfdist.runtime.probe", os.path.abspath(script_command[0]), *script_command[1:]], env


def _run_tf_distribute(prog: str, args, env: dict) -> int:
    if args.mpi:
        err(prog, "--mpi is for --backend horovod")
        return EXIT_BAD_INPUT
    try:
        if args.slurm:
            try:
                workers = slurm.step_workers(env)
            except slurm.SlurmError as exc:
                raise launcher.HostsError(str(exc)) from exc
            if args.np is not None and args.np != len(workers):
                raise launcher.HostsError(f"-np {args.np} but the Slurm step has {len(workers)} tasks")
        elif args.jobset:
            workers = jobset_workers(args.np, env, args.port)
        else:
            workers = launcher.tf_distribute_workers(args.np, args.hosts, this_host=args.this_host,
                                                     base_port=args.port)
    except launcher.HostsError as exc:
        err(prog, str(exc))
        return EXIT_BAD_INPUT
    local = [w for w in workers if w.local]
    remote = [w for w in workers if not w.local]
    if remote and (args.slurm or args.jobset):
        pass
    elif remote:
        hosts = sorted({w.host for w in remote}, key=[w.host for w in workers].index)
        here = local[0].host
        sys.stderr.write(f"{prog}: starting workers {', '.join(str(w.rank) for w in local)} of {args.np} here "
                         f"({here}); start the others on {', '.join(hosts)} with the same command plus "
                         "--this-host HOST (tfdist does not log in to other hosts)\n")
        sys.stderr.flush()
    python = args.python or sys.executable
    env = launcher.single_process_env(env) if (args.slurm or args.jobset) else env
    try:
        result = launcher.execute_workers(workers, [python, *args.script_command], timeout=args.timeout or None,
                                          env=env, sink=launcher.stream_to(sys.stdout))
    except KeyboardInterrupt:
        err(prog, "interrupted; the workers were killed")
        return launcher.EXIT_INTERRUPTED
    except OSError as exc:
        err(prog, f"could not start {python}: {exc}")
        return EXIT_BAD_INPUT
    if result.timed_out:
        err(prog, f"timed out after {args.timeout:g}s; killed the job "
                   f"({len(result.killed_pids) or len(local)} process(es)) - raise --timeout if it needs longer")
        return launcher.EXIT_TIMEOUT
    if result.returncode != 0:
        stopped = [w.rank for w, code in zip(local, result.worker_returncodes) if code is None]
        sys.stderr.write(f"{prog}: the job failed (worker {result.failed_worker} exited {result.returncode}"
                         + (f"; killed worker(s) {', '.join(map(str, stopped))}" if stopped else "")
                         + "); see the rank-prefixed output above\n")
    return result.returncode


def main(argv: Optional[List[str]] = None) -> int:
    argv = list(sys.argv[1:] if argv is None else argv)
    if argv and argv[0] == "run":
        return run_main(argv[1:])
    if argv and argv[0] == "verify":
        return verify_main(argv[1:])
    sys.stderr.write("usage: python -m tfdist.runtime.commands {run,verify} ...\n")
    return EXIT_BAD_INPUT


if __name__ == "__main__":
    sys.exit(main())
