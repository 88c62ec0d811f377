"""``tfdist verify`` on the command line (dispatched from tfdist.cli and
tfdist.runtime.commands): its parser, its checks of the options together,
``--backend auto``, and the report it prints and writes."""
from __future__ import annotations

import argparse
import json
import os
import sys
from typing import List, Optional

from ..options import AUTO
from . import compare as compare_runs
from . import launcher, ps_launcher, verify, verify_ps
from .command_line import (BACKENDS, EXIT_BAD_INPUT, Parser, err, optional_remainder, positive_float, positive_int,
                           write_text_atomic)
from .compare import DEFAULT_ABS_TOLERANCE, DEFAULT_REL_TOLERANCE, PlotUnavailable

VERIFY_DESCRIPTION = """\
Check that a converted script trains correctly on N processes.

Converts SCRIPT with tfdist (unless --converted), runs the ORIGINAL once as a
single process and the CONVERTED script on N CPU processes (under horovodrun,
or as N TF_CONFIG workers with --backend tf-distribute; --backend auto, the
default, takes the engine tfdist convert chooses for SCRIPT, or with
--converted the one it was converted for, and says which on stderr), each
run in its own fresh temporary working directory, with a probe that
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

--strategy parameter-server -np W --ps P (tf-distribute's
  ParameterServerStrategy; the default with --converted for a script that
  builds one): the conversion (tfdist convert --strategy parameter-server)
  runs as a chief, W workers and P parameter servers on localhost, as
  `tfdist run --strategy parameter-server` starts them; the workers and
  parameter servers serve until the chief ends and are then stopped (no
  failure).  Checked: the chief exited 0 and no other task exited before it;
  the chief built a ParameterServerStrategy and every other task served it;
  the optimizer steps the workers took together (counted on the chief, which
  schedules them) are the original's; the first fit's learning rate is the
  original's (x 1, when tfdist converted); only the chief wrote
  checkpoint/summary/model files; --compare: the chief's final loss against
  the original's.  Not checked, said in the report: identical replicas (the
  workers hold no variables) and samples per rank (the probe does not see
  the workers' batches).  Not with --steps, --sweep, --local-devices,
  --lr-scaling, --warmup-epochs.

exit status: 0 PASS, 1 FAIL, 3 bad input (missing script, not convertible) or
  Horovod not installed (--backend horovod), or --plot without matplotlib.
  --sweep: 0 when the policy that tracks the original best PASSes, else 1.

Everything after SCRIPT is passed to both runs of the script:
  tfdist verify -np 2 --steps 20 train.py --epochs 1"""


def build_verify_parser(script_args: bool = True) -> argparse.ArgumentParser:
    """``script_args=False``: SCRIPT only, no ARGS remainder, no abbreviated
    options (for :func:`parse_verify_args`, which finds the script's own)."""
    p = Parser(prog="tfdist verify", description=VERIFY_DESCRIPTION, epilog=VERIFY_EPILOG,
                formatter_class=argparse.RawDescriptionHelpFormatter, allow_abbrev=script_args,
                usage="tfdist verify [--backend {auto,horovod,tf-distribute}] [-np N] [--steps K] [--converted [--original ORIG]] "
                      "[--strategy {mirrored,parameter-server} [--ps P]] [--local-devices N] [--compare] [--plot FILE.png] [--lr-scaling {linear,sqrt,none}] [--warmup-epochs K] [--steps-per-epoch S] "
                      "[--sweep [--policies LIST]] [--tolerance REL] [--abs-tolerance ABS] [--report FILE.json] "
                      "[--timeout S] [--python PYTHON] [--json] [--keep] [-v] SCRIPT [OPTIONS] [ARGS...] [-- ARGS...]")
    p.add_argument("--backend", choices=(AUTO, *BACKENDS), default=AUTO,
                   help="the engine: convert with it and run the ranks under horovodrun (horovod) or as "
                        "TF_CONFIG workers (tf-distribute); auto (default): the engine tfdist convert chooses "
                        "for SCRIPT (with --converted: the one it was converted for), said on stderr")
    p.add_argument("-np", "--num-proc", dest="np", type=positive_int, default=2, metavar="N",
                   help="number of ranks for the converted script (default: 2)")
    p.add_argument("--strategy", choices=("mirrored", ps_launcher.PARAMETER_SERVER), default=None,
                   help="tf-distribute: parameter-server converts for ParameterServerStrategy and runs a chief, "
                        "-np workers and --ps parameter servers (see below); default: mirrored, or with "
                        "--converted parameter-server for a script that builds one")
    p.add_argument("--ps", type=positive_int, default=None, metavar="P",
                   help="with --strategy parameter-server: the number of parameter servers (default 1)")
    p.add_argument("--local-devices", type=positive_int, default=1, metavar="N",
                   help="--backend tf-distribute: run the conversion as ONE process whose CPU is split into N "
                        "logical devices, so its MirroredStrategy() replicates over them as over N GPUs "
                        "(implies -np 1)")
    p.add_argument("--steps", type=positive_int, metavar="K",
                   help="quick check: stop Keras Model.fit after K optimizer steps in the original and "
                        "ceil(K/N) per rank (see below)")
    p.add_argument("--converted", action="store_true",
                   help="SCRIPT is already a Horovod (or, with --backend tf-distribute, a tf.distribute) script: "
                        "do not convert it (the 'original' run is then the same script as one process)")
    p.add_argument("--timeout", type=positive_float, default=600.0, metavar="S",
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
    p.add_argument("--warmup-epochs", type=positive_int, metavar="K",
                   help="convert with a gradual warmup of K epochs (as tfdist convert --warmup-epochs)")
    p.add_argument("--steps-per-epoch", type=positive_int, metavar="S",
                   help="the original script's optimizer steps per epoch, for warmups of training loops whose "
                        "epoch tfdist cannot see (TF1; as tfdist convert --steps-per-epoch); with --warmup-epochs "
                        "or --sweep")
    p.add_argument("--sweep", action="store_true",
                   help="run the original once and the conversion under several learning-rate policies "
                        "(implies --compare) and say which tracks the original best")
    p.add_argument("--policies", metavar="LIST",
                   help="with --sweep: comma-separated policies, each linear, sqrt or none, optionally "
                        "with :warmup=K (default: linear,sqrt,none and linear:warmup=1 where available)")
    p.add_argument("--tolerance", type=positive_float, default=None, metavar="REL",
                   help="--compare: how much higher the converted final loss may be, as a share of the "
                        "original's (default: 0.25)")
    p.add_argument("--abs-tolerance", type=positive_float, default=None, metavar="ABS",
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
        optional_remainder(p.add_argument("args", nargs=argparse.REMAINDER, metavar="ARGS",
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
        err(prog, problem)
        return EXIT_BAD_INPUT
    try:
        report = _verify_report(args)
    except verify.VerifyInputError as exc:
        err(prog, str(exc))
        return EXIT_BAD_INPUT
    except launcher.RuntimeMissing as exc:
        err(prog, str(exc))
        return EXIT_BAD_INPUT
    except KeyboardInterrupt:
        err(prog, "interrupted")
        return launcher.EXIT_INTERRUPTED
    return _verify_output(prog, args, report)


def _verify_problem(args, argv_list: List[str]) -> Optional[str]:
    """What is wrong with verify's options together, or None."""
    compare = args.compare or args.sweep or bool(args.plot)
    problem = _strategy_problem(args)
    if problem is not None:
        pass
    elif args.local_devices > 1:
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
    elif args.converted and args.strategy == "mirrored" and ps_launcher.builds_parameter_servers(args.script):
        problem = (f"{args.script} builds a ParameterServerStrategy: verify it with --strategy parameter-server "
                   "-np W --ps P (its workers serve until a chief ends)")
    if problem is None and args.plot:
        try:
            import matplotlib  # noqa: F401
        except ImportError:
            problem = str(PlotUnavailable("--plot needs matplotlib: pip install 'tfdist[plot]' (or matplotlib)"))
    return problem


def _strategy_problem(args) -> Optional[str]:
    """--strategy / --ps with the other options (None: they go together).
    --converted with a script that builds a ParameterServerStrategy and no
    --strategy: parameter-server, as tfdist run does."""
    if args.strategy is None and args.converted and ps_launcher.builds_parameter_servers(args.script):
        args.strategy = ps_launcher.PARAMETER_SERVER
    if args.strategy != ps_launcher.PARAMETER_SERVER:
        return "--ps P goes with --strategy parameter-server" if args.ps is not None else None
    args.ps = args.ps or 1
    if args.backend not in (AUTO, "tf-distribute"):
        return "--strategy parameter-server is tf.distribute's ParameterServerStrategy: --backend tf-distribute"
    args.backend = "tf-distribute"
    for option, given in (("--steps", args.steps), ("--sweep", args.sweep), ("--local-devices", args.local_devices > 1),
                          ("--lr-scaling", args.lr_scaling != "linear"), ("--warmup-epochs", args.warmup_epochs),
                          ("--steps-per-epoch", args.steps_per_epoch)):
        if given:
            return (f"{option} is not for --strategy parameter-server (the chief schedules the original's steps "
                    "onto the workers, each applying its own batch's gradients with the learning rate as written)")
    return None


def _verify_report(args):
    """Run verify (or the sweep) as the options say; its report."""
    sink = launcher.stream_to(sys.stderr) if args.verbose else None
    tolerances = dict(rel_tolerance=DEFAULT_REL_TOLERANCE if args.tolerance is None else args.tolerance,
                      abs_tolerance=DEFAULT_ABS_TOLERANCE if args.abs_tolerance is None else args.abs_tolerance)
    if args.strategy == ps_launcher.PARAMETER_SERVER:
        return verify_ps.verify_script(args.script, args.np, args.ps, args.args, converted=args.converted,
                                       original=args.original, timeout=args.timeout or None, keep=args.keep,
                                       sink=sink, python=args.python, compare=args.compare or bool(args.plot),
                                       **tolerances)
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
            write_text_atomic(args.report, document)
        except OSError as exc:
            err(prog, f"cannot write the report {args.report}: {exc.strerror or exc}")
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
