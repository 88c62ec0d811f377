"""``tfdist run`` and ``tfdist verify`` (dispatched from tfdist.cli)."""
from __future__ import annotations

import argparse
import json
import os
import sys
from typing import List, Optional

from . import launcher

EXIT_OK = 0
EXIT_FAIL = 1
EXIT_BAD_INPUT = 3

RUN_DESCRIPTION = """\
Launch a (converted) training script on N processes with horovodrun
(Gloo on localhost by default) and stream its output; horovodrun prefixes
every line with the rank, e.g. "[1]<stdout>:epoch 1 ...".

If one rank fails, horovodrun terminates the others and tfdist exits non-zero.
If the whole job is still running after --timeout seconds, tfdist kills it
(horovodrun, every rank and their children) and exits 124."""

RUN_EPILOG = """\
exit status: the job's (0 when every rank succeeded, non-zero if any failed),
  124 on timeout, 130 when interrupted, 3 when horovodrun is not installed or
  SCRIPT does not exist.

Everything after SCRIPT is passed to the script, so tfdist options go before it:
  tfdist run -np 4 --timeout 3600 train.py --epochs 10"""

VERIFY_DESCRIPTION = """\
Check that a converted script trains correctly on N processes.

Converts SCRIPT with tfdist (unless --converted), runs the ORIGINAL once as a
single process and the CONVERTED script under horovodrun on N CPU processes,
each run in its own fresh temporary working directory, with a probe that
observes from outside the script: the final trainable (floating-point)
variables, optimizer steps, and the checkpoint/summary/model files each rank
wrote.  It prints PASS only when

  * every rank exited 0,
  * all ranks hold bitwise-identical final trainable variables,
  * each rank took ~1/N of the original's optimizer steps
    (within +/-20% or +/-1 step, whichever is larger),
  * only rank 0 wrote checkpoint / summary / model files,
  * when the runs recorded the samples they trained on (TF1 feed_dict of a
    train step, eager tf.data iteration, Model.fit on NumPy arrays): every
    sample a rank fed carries the labels the original fed it with, and the
    ranks did not all consume the identical sequence of samples.  Also shown:
    distinct samples per rank, samples shared between ranks within the first
    epoch, and how much of the original's samples the ranks covered.

Otherwise it prints FAIL with the reason(s)."""

VERIFY_EPILOG = """\
--steps K (quick check): the original's Keras Model.fit is stopped gracefully
  (model.stop_training) after K optimizer steps and each rank's after
  ceil(K/N); the code after fit (saving, summaries) still runs.  The 1/N check
  then compares the steps fit had *planned* (epochs x steps per epoch) instead
  of the steps taken, and the variables are compared at the stopping point.
  Other training loops (custom GradientTape loops, tf.compat.v1 Session loops)
  cannot be cut short without changing what the script computes: for them
  --steps has no effect and the scripts run to completion (a warning says so).

exit status: 0 PASS, 1 FAIL, 3 bad input (missing script, not convertible) or
  Horovod not installed.

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


def _positive_int(text: str) -> int:
    value = int(text)
    if value < 1:
        raise argparse.ArgumentTypeError("must be >= 1")
    return value


def build_run_parser() -> argparse.ArgumentParser:
    p = _Parser(prog="tfdist run", description=RUN_DESCRIPTION, epilog=RUN_EPILOG,
                formatter_class=argparse.RawDescriptionHelpFormatter,
                usage="tfdist run -np N [-H HOSTS] [--gloo | --mpi] [--timeout SECONDS] SCRIPT [ARGS...]")
    p.add_argument("-np", "--num-proc", dest="np", type=_positive_int, required=True, metavar="N",
                   help="number of processes (ranks)")
    p.add_argument("-H", "--hosts", metavar="HOSTS",
                   help='hosts and slots, e.g. "host1:4,host2:4" (default: localhost:N)')
    mode = p.add_mutually_exclusive_group()
    mode.add_argument("--gloo", dest="mpi", action="store_false", help="use Gloo (default)")
    mode.add_argument("--mpi", dest="mpi", action="store_true", help="use MPI (needs Horovod built with MPI)")
    p.set_defaults(mpi=False)
    p.add_argument("--timeout", type=_positive_float, default=0.0, metavar="SECONDS",
                   help="kill the whole job after this many seconds and exit 124 "
                        "(default: 0 = no limit, since real training runs take hours; a rank "
                        "that dies ends the whole job anyway - set it to bound a possible deadlock)")
    p.add_argument("--python", metavar="PYTHON",
                   help="interpreter for the ranks (default: the one horovodrun is installed for)")
    p.add_argument("script", metavar="SCRIPT", help="the training script")
    _optional_remainder(p.add_argument("args", nargs=argparse.REMAINDER, metavar="ARGS",
                                       help="arguments for the script"))
    return p


def build_verify_parser() -> argparse.ArgumentParser:
    p = _Parser(prog="tfdist verify", description=VERIFY_DESCRIPTION, epilog=VERIFY_EPILOG,
                formatter_class=argparse.RawDescriptionHelpFormatter,
                usage="tfdist verify [-np N] [--steps K] [--converted] [--timeout S] [--json] [--keep] [-v] "
                      "SCRIPT [ARGS...]")
    p.add_argument("-np", "--num-proc", dest="np", type=_positive_int, default=2, metavar="N",
                   help="number of ranks for the converted script (default: 2)")
    p.add_argument("--steps", type=_positive_int, metavar="K",
                   help="quick check: stop Keras Model.fit after K optimizer steps in the original and "
                        "ceil(K/N) per rank (see below)")
    p.add_argument("--converted", action="store_true",
                   help="SCRIPT is already a Horovod script: do not convert it (the 'original' run is then "
                        "the same script as one process)")
    p.add_argument("--timeout", type=_positive_float, default=600.0, metavar="S",
                   help="limit for each of the two runs, in seconds (default: 600; 0 = no limit)")
    p.add_argument("--json", action="store_true", help="print the full report as JSON on stdout")
    p.add_argument("--keep", action="store_true", help="keep the temporary run directories and logs")
    p.add_argument("-v", "--verbose", action="store_true", help="stream the runs' output to stderr")
    p.add_argument("script", metavar="SCRIPT", help="the single-process training script")
    _optional_remainder(p.add_argument("args", nargs=argparse.REMAINDER, metavar="ARGS",
                                       help="arguments for the script"))
    return p


def _err(prog: str, message: str) -> None:
    sys.stderr.write(f"{prog}: error: {message}\n")
    sys.stderr.flush()


def run_main(argv: Optional[List[str]] = None) -> int:
    parser = build_run_parser()
    args = parser.parse_args(list(sys.argv[1:] if argv is None else argv))
    prog = parser.prog
    if not os.path.isfile(args.script):
        _err(prog, f"no such script: {args.script}")
        return EXIT_BAD_INPUT
    horovodrun = launcher.find_horovodrun()
    if horovodrun is None:
        _err(prog, str(launcher.RuntimeMissing()))
        return EXIT_BAD_INPUT
    python = args.python or launcher.python_for(horovodrun)
    command = launcher.horovodrun_command(args.np, [python, args.script, *args.args], horovodrun=horovodrun,
                                          hosts=args.hosts, mpi=args.mpi)
    env = dict(os.environ)
    env.setdefault("PYTHONUNBUFFERED", "1")
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


def verify_main(argv: Optional[List[str]] = None) -> int:
    from . import verify

    parser = build_verify_parser()
    args = parser.parse_args(list(sys.argv[1:] if argv is None else argv))
    prog = parser.prog
    sink = launcher.stream_to(sys.stderr) if args.verbose else None
    try:
        report = verify.verify_script(args.script, np=args.np, args=args.args, converted=args.converted,
                                      steps=args.steps, timeout=args.timeout or None, keep=args.keep, sink=sink)
    except verify.VerifyInputError as exc:
        _err(prog, str(exc))
        return EXIT_BAD_INPUT
    except launcher.RuntimeMissing as exc:
        _err(prog, str(exc))
        return EXIT_BAD_INPUT
    except KeyboardInterrupt:
        _err(prog, "interrupted")
        return launcher.EXIT_INTERRUPTED
    if args.json:
        json.dump(report.to_dict(), sys.stdout, indent=2, default=str)
        sys.stdout.write("\n")
    else:
        sys.stdout.write(report.format_text() + "\n")
    sys.stdout.flush()
    return report.exit_code


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
