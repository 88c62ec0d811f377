"""Command line: ``tfdist convert | analyze | rules | run | verify | job``.

Exit codes (also in the README):
  0  converted, or nothing to do (unchanged / already distributed)
  1  --check / --diff: some file would change; verify: FAIL; run: a rank failed; job: the job failed
  2  not convertible (explained, with line numbers); nothing written
  3  bad input: missing, unreadable or unparsable file; nothing written
"""
from __future__ import annotations

import argparse
import json
import sys
from typing import List, Optional

from . import __version__, catalog
from .assembly import analyse, convert_path, resolve_options
from .engine import patterns as P
from .engine.source import BadInput, load
from .options import AUTO, BACKEND_CHOICES, MIRRORED, STRATEGIES, Options, OptionsError
from .project import cli_convert_many
from .runtime import commands, job_commands

EXIT_OK, EXIT_CHANGES, EXIT_UNSUPPORTED, EXIT_BAD_INPUT = 0, 1, 2, 3

CONVERT_DESCRIPTION = """\
Convert single-GPU TensorFlow training code to data-parallel code for
Horovod or tf.distribute (--backend; by default chosen per file, see below).

  tfdist convert train.py                 converted script on stdout
  tfdist convert train.py -o train_hvd.py
  tfdist convert - < train.py > out.py    stdin to stdout
  tfdist convert nb.ipynb -o nb_hvd.ipynb notebooks: cell by cell
  tfdist convert project/ -o project_hvd/ a converted mirror of the tree
  tfdist convert project/ --in-place      replace changed files, keep FILE.orig
  tfdist convert project/ --diff          unified diffs, nothing written; exit 1 if a file would change
  tfdist convert project/ --check         CI / pre-commit: exit 1 if a file would change

A directory (or several paths) needs -o, --in-place, --diff or --check.
In a tree every .py and .ipynb file is reported with its status; files that
import neither TensorFlow nor Keras are not parsed, and with -o every file
that is not converted (other files, refused files too) is copied byte for
byte. Skipped: hidden folders, virtual environments (pyvenv.cfg, venv/,
env/), site-packages, __pycache__, node_modules. Links to files are
followed (never replaced by --in-place); links to folders are not entered.
Modules that a file imports (from nets import Net, relative imports,
packages and their re-exports) are read to know which classes are Keras
models.

--backend auto (the default) chooses the engine per file, and says which
and why for every file it converts:
  1. TF1 Session code (tf.Session, tf.compat.v1.Session,
     MonitoredTrainingSession...): horovod
  2. Keras 3 code (import keras / from keras ..., keras_core) or tf_keras:
     tf-distribute
  3. else the installed TensorFlow (package metadata; not imported):
     2.16+ tf-distribute, 2.15 or older horovod
  4. no TensorFlow installed and nothing in the code decides: tf-distribute
--fault-tolerant and --strategy parameter-server (tf-distribute options) make
auto choose tf-distribute.
"""

EPILOG = """exit codes:
  0  converted, or nothing to do (unchanged / already distributed)
  1  --check / --diff: a file would change (as ruff format --diff, and gofmt -d /
     go fix -diff since Go 1.26); verify: FAIL; run: a rank failed
  2  not convertible (explained with line numbers); nothing written
  3  bad input (missing, unreadable, unparsable); nothing written
  trees: the worst file decides (3 > 2 > 1 > 0); one bad file never stops
  the others, and with -o refused files are copied unchanged
"""


def build_parser() -> argparse.ArgumentParser:
    p = argparse.ArgumentParser(prog="tfdist", description="Convert single-GPU TensorFlow training scripts to Horovod or tf.distribute, and prove they train.",
                                formatter_class=argparse.RawDescriptionHelpFormatter, epilog=EPILOG)
    p.add_argument("--version", action="version", version=f"tfdist {__version__}")
    sub = p.add_subparsers(dest="command", metavar="COMMAND")
    c = sub.add_parser("convert", help="convert a training script, a notebook, or a tree of them",
                       description=CONVERT_DESCRIPTION,
                       formatter_class=argparse.RawDescriptionHelpFormatter, epilog=EPILOG)
    c.add_argument("paths", nargs="+", metavar="PATH",
                   help="a .py file, a .ipynb notebook, a directory, or - (stdin to stdout)")
    c.add_argument("-o", "--output", metavar="OUT",
                   help="a file: write the converted script there (default: stdout); "
                        "a directory / several paths: write a mirrored copy of the tree there")
    c.add_argument("-i", "--in-place", action="store_true",
                   help="replace the files that change (atomically), keeping FILE.orig")
    c.add_argument("--no-backup", action="store_true", help="with --in-place: do not keep FILE.orig")
    c.add_argument("--diff", action="store_true", help="print unified diffs on stdout; write nothing; exit 1 when a file would change, 0 when none "
                        "would (as ruff format --diff, and gofmt -d / go fix -diff since Go 1.26)")
    c.add_argument("--check", action="store_true",
                   help="write nothing; exit 1 if any file would change (for CI and pre-commit)")
    c.add_argument("--backend", default=AUTO, choices=BACKEND_CHOICES,
                   help="the engine: horovod, tf-distribute, or auto (the default): chosen per file from its code "
                        "and the installed TensorFlow (see above)")
    c.add_argument("--lr-scaling", choices=("linear", "sqrt", "none"), default="linear",
                   help="how learning rates follow the number of processes N: linear (x N, the default: "
                        "Horovod's rule), sqrt (x sqrt(N)), none (as written); the report names the policy "
                        "at every rate it touched")
    c.add_argument("--warmup-epochs", type=int, default=None, metavar="K",
                   help="ramp the learning rate linearly per step from the rate as written to the scaled one "
                        "(--lr-scaling linear or sqrt) over the first K epochs (K >= 1; Goyal et al.'s gradual "
                        "warmup). Keras fit() measures its epochs itself; a GradientTape loop over a dataset "
                        "inside an epoch loop counts that dataset's batches; elsewhere (TF1 loops, step loops "
                        "without epochs) give --steps-per-epoch, or the file is refused, never guessed")
    c.add_argument("--steps-per-epoch", type=int, default=None, metavar="S",
                   help="with --warmup-epochs: the original (single-process) script's optimizer steps per "
                        "epoch, for training loops whose epoch tfdist cannot see; each process warms up over "
                        "K * S / N of its own steps")
    c.add_argument("--fault-tolerant", action="store_true",
                   help="tf-distribute: Keras fit() backs up its state every epoch "
                        "(BackupAndRestore), so a restarted worker resumes where it stopped")
    c.add_argument("--strategy", choices=STRATEGIES, default=MIRRORED,
                   help="tf-distribute: mirrored (the default: MirroredStrategy, MultiWorkerMirroredStrategy under "
                        "TF_CONFIG) or parameter-server (ParameterServerStrategy: tf-keras fit() coordinated by the "
                        "chief, variables on the parameter servers; run it with tfdist run --strategy "
                        "parameter-server -np W --ps P)")
    c.add_argument("--ps-min-shard-bytes", type=int, default=None, metavar="BYTES",
                   help="parameter-server: a variable is split across the parameter servers into shards of at "
                        "least BYTES (MinSizePartitioner; default 262144, 256 KiB)")
    c.add_argument("--report", metavar="REPORT.json", help="write a JSON report of every file and change")
    c.add_argument("--format", choices=("text", "json", "github", "sarif"), default="text",
                   help="also print the findings on stdout for CI tools: github (workflow annotations on the "
                        "pull request's lines), sarif (SARIF 2.1.0), json (the --report document); "
                        "with --check, -o or --in-place")
    c.add_argument("-j", "--jobs", type=int, default=0, metavar="N",
                   help="processes for trees (default: one per core)")
    c.add_argument("-q", "--quiet", action="store_true", help="only errors and the summary on stderr")
    an = sub.add_parser("analyze", help="explain which training pattern a script uses and why")
    an.add_argument("path", metavar="FILE")
    an.add_argument("--json", action="store_true")
    an.add_argument("--backend", default=AUTO, choices=BACKEND_CHOICES,
                    help="also say whether this engine converts the script, or why not (auto, the default: "
                         "the engine tfdist convert would choose)")
    sub.add_parser("run", help="launch a (converted) script on N processes with horovodrun", add_help=False)
    sub.add_parser("verify", help="convert, run on N processes, and check the ranks trained correctly", add_help=False)
    sub.add_parser("rules", help="list every rule (tfdist rules), or show one with its example (tfdist rules ID)",
                   add_help=False)
    sub.add_parser("job", help="run a converted script on Slurm (sbatch) or Kubernetes (Kubeflow TrainJob)",
                   add_help=False)
    return p


def main(argv: Optional[List[str]] = None) -> int:
    argv = list(sys.argv[1:] if argv is None else argv)
    if argv and argv[0] in ("run", "verify"):
        return (commands.run_main if argv[0] == "run" else commands.verify_main)(argv[1:])
    if argv and argv[0] == "rules":
        return catalog.main(argv[1:])
    if argv and argv[0] == "job":
        return job_commands.main(argv[1:])
    parser = build_parser()
    args = parser.parse_args(argv)
    if args.command == "convert":
        return cmd_convert(args)
    if args.command == "analyze":
        return cmd_analyze(args)
    parser.print_help()
    return EXIT_OK


def options_from(args) -> Options:
    """The conversion's Options from the command line (OptionsError: a bad combination)."""
    return Options(backend=args.backend, lr_scaling=getattr(args, "lr_scaling", "linear"),
                   warmup_epochs=getattr(args, "warmup_epochs", None),
                   steps_per_epoch=getattr(args, "steps_per_epoch", None),
                   fault_tolerant=bool(getattr(args, "fault_tolerant", False)),
                   strategy=getattr(args, "strategy", MIRRORED), min_shard_bytes=getattr(args, "ps_min_shard_bytes", None))


def cmd_convert(args) -> int:
    """Single files, stdin, notebooks and trees share one code path (tfdist.project.runner)."""
    try:
        options = options_from(args)
    except OptionsError as e:
        print(f"tfdist convert: {e}", file=sys.stderr)
        return EXIT_BAD_INPUT
    return cli_convert_many(args, options)


def cmd_analyze(args) -> int:
    try:
        src = load(args.path)
    except BadInput as e:
        print(str(e), file=sys.stderr)
        return EXIT_BAD_INPUT
    options, choice = resolve_options(Options(backend=args.backend), src.data)
    a, evidence = analyse(src, backend=options)
    result = convert_path(args.path, backend=options)
    engine = {"backend": options.backend, "status": result.status, "error": result.error,
              "error_line": result.error_line, "changes": len(result.changes), "warnings": len(result.warnings)}
    if choice is not None:
        engine["backend_reason"] = choice.reason
    pattern = P.join_all(e.pattern for e in evidence)
    hierarchy = [f.describe() for f in a.classes.values() if f.kinds]
    types = a.describe_types()
    if args.json:
        json.dump({"path": args.path, "pattern": pattern,
                   "patterns": sorted({e.pattern for e in evidence}),
                   "evidence": [e.__dict__ for e in evidence], "hierarchy": hierarchy, "types": types,
                   "engine": engine},
                  sys.stdout, indent=2)
        print()
        return EXIT_OK
    print(f"{args.path}: pattern {pattern}")
    for e in evidence:
        print(f"  evidence  {args.path}:{e.line}: {e.pattern}: {e.construct}")
    for h in hierarchy:
        print(f"  class     {h}")
    for t in types:
        print(f"  type      {t}")
    if choice is not None:
        print(f"  chosen    {choice.describe()}")
    if pattern == P.UNKNOWN:
        print("  no training loop found")
    elif result.error:
        where = f"line {result.error_line}: " if result.error_line else ""
        print(f"  engine    {options.backend}: not converted: {where}{result.error}")
    else:
        print(f"  engine    {options.backend}: {result.status} ({len(result.changes)} changes, {len(result.warnings)} warnings)")
    return EXIT_OK
