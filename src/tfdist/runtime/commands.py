"""``tfdist run`` and ``tfdist verify`` (dispatched from tfdist.cli)."""
from __future__ import annotations

import argparse
import json
import os
import signal
import sys
import tempfile
import threading
from typing import List, Optional

from ..options import AUTO
from . import compare as compare_runs
from . import launcher, slurm, verify
from .compare import DEFAULT_ABS_TOLERANCE, DEFAULT_REL_TOLERANCE, PlotUnavailable
from .kubernetes import jobset_workers
from .probe.state import ADDED_PATH_ENV, ORIG_PYTHONPATH_ENV, PROBE_DIR_ENV

EXIT_OK = 0
EXIT_FAIL = 1
EXIT_BAD_INPUT = 3

#: Engines ``tfdist run`` / ``verify`` can launch (the runtime side of
#: tfdist.backends; this module must not import TensorFlow).
BACKENDS = ("horovod", "tf-distribute")

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
jobs sharing a node do not collide).  horovod: run ONCE in the batch script
(not under srun); tfdist starts horovodrun with -np SLURM_NTASKS and -H the
allocation's nodes.  `tfdist job slurm` writes such a batch script.

--record DIR runs every process under verify's probe and leaves what each
rank did in DIR/rank-<R>.json (optimizer steps, a hash of the final trainable
variables, the files it wrote), to check a cluster run as verify checks one
on this machine.

If the whole job is still running after --timeout seconds, tfdist kills it
(every rank and their children) and exits 124."""

RUN_EPILOG = """\
exit status: the job's (0 when every rank succeeded, non-zero if any failed),
  124 on timeout, 130 when interrupted, 3 when horovodrun is not installed
  (--backend horovod), SCRIPT does not exist or -H cannot be used.

Everything after SCRIPT is passed to the script, so tfdist options go before it:
  tfdist run -np 4 --timeout 3600 train.py --epochs 10
  tfdist run --backend tf-distribute -np 2 train_dist.py --epochs 10"""

VERIFY_DESCRIPTION = """\
Check that a converted script trains correctly on N processes.

Converts SCRIPT with tfdist (unless --converted), runs the ORIGINAL once as a
single process and the CONVERTED script on N CPU processes (under horovodrun,
or as N TF_CONFIG workers with --backend tf-distribute), each run in its own
fresh temporary working directory, with a probe that
observes from outside the script: the final trainable (floating-point)
variables, optimizer steps, and the checkpoint/summary/model files each rank
wrote.  It prints PASS only when

  * every rank exited 0,
  * all ranks hold bitwise-identical final trainable variables,
  * each rank took ~1/N of the original's optimizer steps
    (within +/-20% or +/-1 step, whichever is larger),
  * only rank 0 wrote checkpoint / summary / model files (tf-distribute: at
    the user's paths.  The other workers' saves into TensorFlow's
    multi-worker temporary directories (<dir>/workertemp_<N>/) that they
    removed again are allowed, and files in the system's temporary directory
    are not recorded at all; a non-chief's file at the user's paths, or a
    workertemp file left behind, is a FAIL),
  * when the runs recorded the samples they trained on (TF1 feed_dict of a
    train step, eager tf.data iteration, Model.fit on NumPy arrays): every
    sample a rank fed carries the labels the original fed it with, and the
    ranks did not all consume the identical sequence of samples.  Also shown:
    distinct samples per rank, samples shared between ranks within the first
    epoch, and how much of the original's samples the ranks covered.

Otherwise it prints FAIL with the reason(s).

--compare asks the other question: does the converted script still LEARN like
the original?  The probe records the training loss of both runs from outside
the script (Keras fit's logs per batch and per epoch, with its metrics and
val_* values; the target of every tape.gradient call; the loss a TF1 train op
minimises, fetched in the same Session.run), and verify prints the two side
by side: final loss and metrics, their ratio, samples seen, steps, wall time,
and a verdict: the converted run's final loss (and val_loss) may be at most
max(--tolerance x the original's, --abs-tolerance) above the original's;
a diverged (NaN/inf) loss fails.  --plot FILE.png draws both loss curves
against the share of the data seen (epochs for fit, samples seen for step
loops where both runs recorded them).  --sweep converts the script under
several learning-rate policies (default linear, sqrt, none, and linear with
one warmup epoch where the converter can warm the script up -- Keras fit,
tape loops over a dataset in an epoch loop, any loop with --steps-per-epoch;
--policies to choose), runs the original once and each conversion, and says
which policy tracks the original best: among those within tolerance, the
final loss closest to the original's, then the smallest curve gap."""

VERIFY_EPILOG = """\
Options may come before or after SCRIPT (tfdist verify train.py -np 2
  --compare --plot curves.png); whatever follows SCRIPT and is not an option of
  tfdist verify goes to the script, and so does everything after -- (tfdist
  verify train.py -np 2 -- --steps 5 hands --steps 5 to train.py).

--steps K (quick check): the original's Keras Model.fit is stopped gracefully
  (model.stop_training) after K optimizer steps and each rank's after
  ceil(K/N); the code after fit (saving, summaries) still runs.  The 1/N check
  then compares the steps fit had *planned* (epochs x steps per epoch) instead
  of the steps taken, and the variables are compared at the stopping point.
  Other training loops (custom GradientTape loops, tf.compat.v1 Session loops)
  cannot be cut short without changing what the script computes: for them
  --steps has no effect and the scripts run to completion (a warning says so).

--backend tf-distribute: the original runs as one process without TF_CONFIG
  and the converted script as N TF_CONFIG workers on localhost, both with the
  same interpreter (--python, default: the one running tfdist; it needs
  TensorFlow, e.g. the environment `bash scripts/setup_runtime.sh
  tf-distribute` builds).  Ranks are TF_CONFIG task indices (worker 0 is the
  chief); each worker must build a MultiWorkerMirroredStrategy spanning all N
  workers.  Samples: the batches of a dataset iterated eagerly (also through
  experimental_distribute_dataset, whose per-replica batches are this
  worker's rows, whether the step itself is a tf.function or not) and eager
  tape steps are recorded.  Model.fit on a dataset is not (it iterates inside
  a tf.function), nor, under MultiWorkerMirroredStrategy, Model.fit on NumPy
  arrays (the strategy shards them inside fit): such scripts get no sample
  checks, and a warning says so.

--local-devices N (tf-distribute): the conversion runs as ONE process (no
  TF_CONFIG) whose CPU the probe splits into N logical devices before
  TensorFlow starts, so the script's MirroredStrategy() replicates over N
  devices as it would over N GPUs.  Checked: the strategy runs N replicas,
  each variable's N copies are bitwise identical, and the process took ~1/N
  of the original's optimizer steps (the global batch is N times larger).

exit status: 0 PASS, 1 FAIL, 3 bad input (missing script, not convertible) or
  Horovod not installed (--backend horovod), or --plot without matplotlib.
  --sweep: 0 when the policy that tracks the original best PASSes, else 1.

Everything after SCRIPT is passed to both runs of the script:
  tfdist verify -np 2 --steps 20 train.py --epochs 1"""


class _Parser(argparse.ArgumentParser):
    """argparse exits 2 on usage errors; tfdist uses 3 for bad input."""

    def error(self, message):
        self.print_usage(sys.stderr)
        self.exit(EXIT_BAD_INPUT, f"{self.prog}: error: {message}\n")


def _optional_remainder(action: argparse.Action) -> None:
    # argparse lists a REMAINDER positional as "required" in its error message
    # although it matches nothing; ARGS is optional.
    action.required = False


def _positive_float(text: str) -> float:
    value = float(text)
    if value < 0:
        raise argparse.ArgumentTypeError("must be >= 0")
    return value


def _port(text: str) -> int:
    value = int(text)
    if not 1 <= value <= 65535:
        raise argparse.ArgumentTypeError("must be a TCP port (1-65535)")
    return value


def _positive_int(text: str) -> int:
    value = int(text)
    if value < 1:
        raise argparse.ArgumentTypeError("must be >= 1")
    return value


def build_run_parser() -> argparse.ArgumentParser:
    p = _Parser(prog="tfdist run", description=RUN_DESCRIPTION, epilog=RUN_EPILOG,
                formatter_class=argparse.RawDescriptionHelpFormatter,
                usage="tfdist run [--backend {horovod,tf-distribute}] (-np N [-H HOSTS] | --slurm) [--gloo | --mpi] "
                      "[--this-host HOST] [--port PORT] [--timeout SECONDS] [--python PYTHON] [--record DIR] "
                      "SCRIPT [ARGS...]")
    p.add_argument("--backend", choices=BACKENDS, default="horovod",
                   help="horovod: launch with horovodrun (default); tf-distribute: start N TF_CONFIG workers")
    p.add_argument("-np", "--num-proc", dest="np", type=_positive_int, metavar="N",
                   help="number of processes (ranks); required outside a Slurm job")
    p.add_argument("--slurm", action="store_true",
                   help="take the processes from the Slurm job this runs in (the default when -np is not "
                        "given and SLURM_JOB_ID is set; see above)")
    p.add_argument("--jobset", action="store_true",
                   help="tf-distribute in a pod of the Kubeflow Trainer v2 job `tfdist job kubernetes` writes: "
                        "this pod is worker JOB_COMPLETION_INDEX of -np N, worker i at "
                        "<JOBSET_NAME>-node-0-<i>.<JOBSET_NAME>:--port (default 2222)")
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
    p.add_argument("--port", type=_port, metavar="PORT",
                   help="tf-distribute: worker i listens on PORT + i "
                        f"(default: free ports on one host, {launcher.DEFAULT_BASE_PORT} with several hosts)")
    p.add_argument("--timeout", type=_positive_float, default=0.0, metavar="SECONDS",
                   help="kill the whole job after this many seconds and exit 124 "
                        "(default: 0 = no limit, since real training runs take hours; a rank "
                        "that dies ends the whole job anyway - set it to bound a possible deadlock)")
    p.add_argument("--python", metavar="PYTHON",
                   help="interpreter for the ranks (default: the one horovodrun is installed for; "
                        "tf-distribute: the one running tfdist)")
    p.add_argument("script", metavar="SCRIPT", help="the training script")
    _optional_remainder(p.add_argument("args", nargs=argparse.REMAINDER, metavar="ARGS",
                                       help="arguments for the script"))
    return p


def build_verify_parser(script_args: bool = True) -> argparse.ArgumentParser:
    """``script_args=False``: SCRIPT only, no ARGS remainder, no abbreviated
    options (for :func:`parse_verify_args`, which finds the script's own)."""
    p = _Parser(prog="tfdist verify", description=VERIFY_DESCRIPTION, epilog=VERIFY_EPILOG,
                formatter_class=argparse.RawDescriptionHelpFormatter, allow_abbrev=script_args,
                usage="tfdist verify [--backend {auto,horovod,tf-distribute}] [-np N] [--steps K] [--converted [--original ORIG]] "
                      "[--local-devices N] [--compare] [--plot FILE.png] [--lr-scaling {linear,sqrt,none}] [--warmup-epochs K] [--steps-per-epoch S] "
                      "[--sweep [--policies LIST]] [--tolerance REL] [--abs-tolerance ABS] [--report FILE.json] "
                      "[--timeout S] [--python PYTHON] [--json] [--keep] [-v] SCRIPT [OPTIONS] [ARGS...] [-- ARGS...]")
    p.add_argument("--backend", choices=(AUTO, *BACKENDS), default=AUTO,
                   help="the engine: convert with it and run the ranks under horovodrun (horovod) or as "
                        "TF_CONFIG workers (tf-distribute); auto (default): the engine tfdist convert chooses "
                        "for SCRIPT (with --converted: the one it was converted for), said on stderr")
    p.add_argument("-np", "--num-proc", dest="np", type=_positive_int, default=2, metavar="N",
                   help="number of ranks for the converted script (default: 2)")
    p.add_argument("--local-devices", type=_positive_int, default=1, metavar="N",
                   help="--backend tf-distribute: run the conversion as ONE process whose CPU is split into N "
                        "logical devices, so its MirroredStrategy() replicates over them as over N GPUs "
                        "(implies -np 1)")
    p.add_argument("--steps", type=_positive_int, metavar="K",
                   help="quick check: stop Keras Model.fit after K optimizer steps in the original and "
                        "ceil(K/N) per rank (see below)")
    p.add_argument("--converted", action="store_true",
                   help="SCRIPT is already a Horovod (or, with --backend tf-distribute, a tf.distribute) script: "
                        "do not convert it (the 'original' run is then the same script as one process)")
    p.add_argument("--timeout", type=_positive_float, default=600.0, metavar="S",
                   help="limit for each of the two runs, in seconds (default: 600; 0 = no limit)")
    p.add_argument("--python", metavar="PYTHON",
                   help="interpreter for both runs (default: tf-distribute: the one running tfdist; "
                        "horovod: the one horovodrun belongs to)")
    p.add_argument("--original", metavar="ORIG",
                   help="with --converted: the single-process script to run as the original (default: SCRIPT itself)")
    p.add_argument("--compare", action="store_true",
                   help="also record the training loss of both runs and judge whether the converted script "
                        "learns like the original (see above)")
    p.add_argument("--plot", metavar="FILE.png",
                   help="draw the loss curves of the original and the converted run(s) (implies --compare; "
                        "needs matplotlib: pip install 'tfdist[plot]')")
    p.add_argument("--lr-scaling", choices=("linear", "sqrt", "none"), default="linear",
                   help="convert with this learning-rate policy (as tfdist convert --lr-scaling)")
    p.add_argument("--warmup-epochs", type=_positive_int, metavar="K",
                   help="convert with a gradual warmup of K epochs (as tfdist convert --warmup-epochs)")
    p.add_argument("--steps-per-epoch", type=_positive_int, metavar="S",
                   help="the original script's optimizer steps per epoch, for warmups of training loops whose "
                        "epoch tfdist cannot see (TF1; as tfdist convert --steps-per-epoch); with --warmup-epochs "
                        "or --sweep")
    p.add_argument("--sweep", action="store_true",
                   help="run the original once and the conversion under several learning-rate policies "
                        "(implies --compare) and say which tracks the original best")
    p.add_argument("--policies", metavar="LIST",
                   help="with --sweep: comma-separated policies, each linear, sqrt or none, optionally "
                        "with :warmup=K (default: linear,sqrt,none and linear:warmup=1 where available)")
    p.add_argument("--tolerance", type=_positive_float, default=None, metavar="REL",
                   help="--compare: how much higher the converted final loss may be, as a share of the "
                        "original's (default: 0.25)")
    p.add_argument("--abs-tolerance", type=_positive_float, default=None, metavar="ABS",
                   help="--compare: ...or this absolute amount, whichever is larger (default: 0.05)")
    p.add_argument("--report", metavar="FILE.json",
                   help="write the full report as JSON to this file: per-rank records, and with --compare "
                        "the per-step and per-epoch losses of every run")
    p.add_argument("--json", action="store_true", help="print the full report as JSON on stdout")
    p.add_argument("--keep", action="store_true", help="keep the temporary run directories and logs")
    p.add_argument("-v", "--verbose", action="store_true", help="stream the runs' output to stderr")
    p.add_argument("script", metavar="SCRIPT", help="the single-process training script, or a notebook (.ipynb: run as the "
                   "script its code cells make, from its folder, original and conversion alike)")
    if script_args:
        _optional_remainder(p.add_argument("args", nargs=argparse.REMAINDER, metavar="ARGS",
                                           help="arguments for the script: anything after SCRIPT that is not "
                                                "an option of tfdist verify, and everything after --"))
    return p


def parse_verify_args(argv: List[str]) -> argparse.Namespace:
    """tfdist verify's own options may come before or after SCRIPT
    (``tfdist verify train.py -np 2 --compare``); what follows SCRIPT and
    is not one of them is the script's, and so is everything after ``--``
    (``tfdist verify train.py -np 2 -- --steps 5`` hands --steps to the script)."""
    tail: List[str] = []
    if "--" in argv:
        cut = argv.index("--")
        argv, tail = argv[:cut], argv[cut + 1:]
    parser = build_verify_parser(script_args=False)
    if any(a in ("-h", "--help") for a in argv):
        build_verify_parser().parse_args(argv)  # prints the full help and exits
    args, extra = parser.parse_known_args(argv)
    # before SCRIPT only tfdist's options: anything else there is an error, as it always was
    parser.parse_args(argv[:_script_position(parser, argv) + 1])
    args.args = extra + tail
    return args


def _script_position(parser: argparse.ArgumentParser, argv: List[str]) -> int:
    """Index of SCRIPT in argv: the first word that is neither an option
    nor the value of one (``--original x.py x.py``: the second)."""
    i = 0
    while i < len(argv):
        word = argv[i]
        if not word.startswith("-") or word == "-":
            return i
        action = parser._option_string_actions.get(word)  # noqa: SLF001 - argparse's own table
        takes_value = action is not None and action.nargs != 0 and "=" not in word
        i += 2 if takes_value else 1
    return len(argv) - 1


def _err(prog: str, message: str) -> None:
    sys.stderr.write(f"{prog}: error: {message}\n")
    sys.stderr.flush()


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
        _err(prog, "terminated (SIGTERM); the job's processes were killed")
        return 128 + signal.SIGTERM
    finally:
        if previous is not None:
            signal.signal(signal.SIGTERM, previous)


def _main_thread() -> bool:
    return threading.current_thread() is threading.main_thread()


def _run(prog: str, args) -> int:
    if not os.path.isfile(args.script):
        _err(prog, f"no such script: {args.script}")
        return EXIT_BAD_INPUT
    env = dict(os.environ)
    env.setdefault("PYTHONUNBUFFERED", "1")
    args.slurm = args.slurm or (args.np is None and slurm.in_job(env))
    if args.np is None and not args.slurm:
        _err(prog, "-np N is required (outside a Slurm job; inside one, --slurm takes the job's tasks)")
        return EXIT_BAD_INPUT
    if args.jobset and (args.slurm or args.backend != "tf-distribute" or args.np is None or args.hosts):
        _err(prog, "--jobset goes with --backend tf-distribute and -np N, without --slurm or -H")
        return EXIT_BAD_INPUT
    if args.slurm:
        for option, value in (("-H", args.hosts), ("--this-host", args.this_host), ("--port", args.port)):
            if value is not None:
                _err(prog, f"{option} is not for --slurm: the Slurm job says where the processes run")
                return EXIT_BAD_INPUT
    args.script_command = [args.script, *args.args]
    if args.record:
        args.script_command, env = _recorded(args.record, args.script_command, env)
    if args.backend == "tf-distribute":
        return _run_tf_distribute(prog, args, env)
    for option, value in (("--this-host", args.this_host), ("--port", args.port)):
        if value is not None:
            _err(prog, f"{option} is for --backend tf-distribute")
            return EXIT_BAD_INPUT
    horovodrun = launcher.find_horovodrun()
    if horovodrun is None:
        _err(prog, str(launcher.RuntimeMissing()))
        return EXIT_BAD_INPUT
    python = args.python or launcher.python_for(horovodrun)
    hosts, np = args.hosts, args.np
    if args.slurm:
        if slurm.in_step(env) and env.get("SLURM_NTASKS", "1") != "1":
            _err(prog, f"under srun with {env['SLURM_NTASKS']} tasks every task would start its own horovodrun: "
                       "run `tfdist run --backend horovod --slurm` once, in the batch script (not under srun)")
            return EXIT_BAD_INPUT
        try:
            slurm_np, hosts = slurm.horovod_hosts(env)
        except slurm.SlurmError as exc:
            _err(prog, str(exc))
            return EXIT_BAD_INPUT
        if np is not None and np != slurm_np:
            _err(prog, f"-np {np} but the Slurm job has {slurm_np} tasks")
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
        _err(prog, "interrupted; the job was killed")
        return launcher.EXIT_INTERRUPTED
    except OSError as exc:
        _err(prog, f"could not start {horovodrun}: {exc}")
        return EXIT_BAD_INPUT
    if result.timed_out:
        _err(prog, f"timed out after {args.timeout:g}s; killed the job "
                   f"({len(result.killed_pids) or 1} process(es)) - raise --timeout if it needs longer")
        return launcher.EXIT_TIMEOUT
    if result.returncode != 0:
        sys.stderr.write(f"{prog}: the job failed (horovodrun exit status {result.returncode}); "
                         "see the rank-prefixed output above\n")
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
        _err(prog, "--mpi is for --backend horovod")
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
        _err(prog, str(exc))
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
        _err(prog, "interrupted; the workers were killed")
        return launcher.EXIT_INTERRUPTED
    except OSError as exc:
        _err(prog, f"could not start {python}: {exc}")
        return EXIT_BAD_INPUT
    if result.timed_out:
        _err(prog, f"timed out after {args.timeout:g}s; killed the job "
                   f"({len(result.killed_pids) or len(local)} process(es)) - raise --timeout if it needs longer")
        return launcher.EXIT_TIMEOUT
    if result.returncode != 0:
        stopped = [w.rank for w, code in zip(local, result.worker_returncodes) if code is None]
        sys.stderr.write(f"{prog}: the job failed (worker {result.failed_worker} exited {result.returncode}"
                         + (f"; killed worker(s) {', '.join(map(str, stopped))}" if stopped else "")
                         + "); see the rank-prefixed output above\n")
    return result.returncode


def verify_main(argv: Optional[List[str]] = None) -> int:
    argv_list = list(sys.argv[1:] if argv is None else argv)
    args = parse_verify_args(argv_list)
    prog = "tfdist verify"
    problem = _verify_problem(args, argv_list)
    if problem is None and args.backend == AUTO:
        try:
            choice = verify.choose_backend(args.script, converted=args.converted)
        except verify.VerifyInputError as exc:
            problem = str(exc)
        else:
            args.backend = choice.backend
            sys.stderr.write(f"{prog}: {args.script}: {choice.describe()}\n")
    if problem:
        _err(prog, problem)
        return EXIT_BAD_INPUT
    try:
        report = _verify_report(args)
    except verify.VerifyInputError as exc:
        _err(prog, str(exc))
        return EXIT_BAD_INPUT
    except launcher.RuntimeMissing as exc:
        _err(prog, str(exc))
        return EXIT_BAD_INPUT
    except KeyboardInterrupt:
        _err(prog, "interrupted")
        return launcher.EXIT_INTERRUPTED
    return _verify_output(prog, args, report)


def _verify_problem(args, argv_list: List[str]) -> Optional[str]:
    """What is wrong with verify's options together, or None."""
    compare = args.compare or args.sweep or bool(args.plot)
    problem = None
    if args.local_devices > 1:
        if args.backend not in ("tf-distribute", AUTO):
            problem = "--local-devices is for --backend tf-distribute (MirroredStrategy over one process's devices)"
        elif args.sweep:
            problem = "--sweep runs workers: not with --local-devices"
        elif "-np" in argv_list or "--num-proc" in argv_list:
            if args.np != 1:
                problem = "--local-devices N runs one process: drop -np (or give -np 1)"
        args.np = 1
        args.backend = "tf-distribute"
    if problem is not None:
        pass
    elif (args.tolerance is not None or args.abs_tolerance is not None) and not compare:
        problem = "--tolerance / --abs-tolerance go with --compare (or --sweep)"
    elif args.policies and not args.sweep:
        problem = "--policies goes with --sweep"
    elif args.sweep and (args.converted or args.lr_scaling != "linear" or args.warmup_epochs):
        problem = "--sweep converts the script under each policy itself: drop --converted, --lr-scaling, --warmup-epochs"
    elif args.original and not args.converted:
        problem = "--original goes with --converted (SCRIPT is then the conversion)"
    elif args.converted and (args.lr_scaling != "linear" or args.warmup_epochs or args.steps_per_epoch):
        problem = "--lr-scaling / --warmup-epochs / --steps-per-epoch choose how tfdist converts: not with --converted"
    elif args.steps_per_epoch and not (args.warmup_epochs or args.sweep):
        problem = "--steps-per-epoch is the epoch length of a warmup: use it with --warmup-epochs or --sweep"
    if problem is None and args.plot:
        try:
            import matplotlib  # noqa: F401
        except ImportError:
            problem = str(PlotUnavailable("--plot needs matplotlib: pip install 'tfdist[plot]' (or matplotlib)"))
    return problem


def _verify_report(args):
    """Run verify (or the sweep) as the options say; its report."""
    sink = launcher.stream_to(sys.stderr) if args.verbose else None
    tolerances = dict(rel_tolerance=DEFAULT_REL_TOLERANCE if args.tolerance is None else args.tolerance,
                      abs_tolerance=DEFAULT_ABS_TOLERANCE if args.abs_tolerance is None else args.abs_tolerance)
    if args.sweep:
        policies = [p.strip() for p in args.policies.split(",") if p.strip()] if args.policies else None
        return verify.sweep_script(args.script, policies, np=args.np, args=args.args, steps=args.steps,
                                   timeout=args.timeout or None, keep=args.keep, sink=sink,
                                   backend=args.backend, python=args.python,
                                   steps_per_epoch=args.steps_per_epoch, **tolerances)
    policy = args.lr_scaling + (f":warmup={args.warmup_epochs}" if args.warmup_epochs else "")
    options = None if args.converted else verify.policy_options(policy, args.steps_per_epoch, args.backend)
    return verify.verify_script(args.script, np=args.np, args=args.args, converted=args.converted,
                                steps=args.steps, timeout=args.timeout or None, keep=args.keep, sink=sink,
                                backend=args.backend, python=args.python,
                                compare=args.compare or bool(args.plot), options=options,
                                policy=None if args.converted else policy, original=args.original,
                                local_devices=args.local_devices, **tolerances)


def _verify_output(prog: str, args, report) -> int:
    """Write the report (--report, --plot) and print it; verify's exit status."""
    document = json.dumps(report.to_dict(), indent=2, default=str) + "\n"
    if args.report:
        try:
            _write_atomic(args.report, document)
        except OSError as exc:
            _err(prog, f"cannot write the report {args.report}: {exc.strerror or exc}")
            return EXIT_BAD_INPUT
    if args.plot:
        comparisons = report.comparisons if args.sweep else [report.comparison]
        comparisons = [c for c in comparisons if c is not None]
        if comparisons:
            title = (f"{os.path.basename(args.script)}: original (1 process) vs converted "
                     f"({args.np} {'workers' if args.backend == 'tf-distribute' else 'ranks'})")
            compare_runs.plot(comparisons, args.plot, title)
    if args.json:
        sys.stdout.write(document)
    else:
        sys.stdout.write(report.format_text() + "\n")
        if args.plot:
            sys.stdout.write(f"  loss curves drawn in {args.plot}\n")
        if args.report:
            sys.stdout.write(f"  report written to {args.report}\n")
    sys.stdout.flush()
    return report.exit_code


def _write_atomic(path: str, text: str) -> None:
    """Write a file whole or not at all (a temporary file renamed over it).
    (tfdist.project.worker has the converter's version, for bytes.)"""
    directory = os.path.dirname(os.path.abspath(path))
    fd, tmp = tempfile.mkstemp(prefix=".tfdist-", suffix=".tmp", dir=directory)
    try:
        with os.fdopen(fd, "w", encoding="utf-8") as fh:
            fh.write(text)
        os.replace(tmp, path)
    except BaseException:
        try:
            os.unlink(tmp)
        except OSError:
            pass
        raise


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
