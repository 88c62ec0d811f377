"""Command line: ``tfdist convert | analyze | run | verify``.

Exit codes (also in the README):
  0  converted, or nothing to do (unchanged / already distributed)
  1  --check: some file would change (tree mode); verify: FAIL; run: a rank failed
  2  not convertible (explained, with line numbers); nothing written
  3  bad input: missing, unreadable or unparsable file; nothing written
"""
from __future__ import annotations

import argparse
import difflib
import json
import os
import sys
import tempfile
from typing import List, Optional

from . import __version__
from .backends import BACKENDS
from .engine import findings as F
from .engine.convert import analyse, convert_path
from .engine.source import BadInput, load

EXIT_OK, EXIT_CHANGES, EXIT_UNSUPPORTED, EXIT_BAD_INPUT = 0, 1, 2, 3

EPILOG = """exit codes:
  0  converted, or nothing to do (unchanged / already distributed)
  1  --check: a file would change; verify: FAIL; run: a rank failed
  2  not convertible (explained with line numbers); nothing written
  3  bad input (missing, unreadable, unparsable); nothing written
"""


def build_parser() -> argparse.ArgumentParser:
    p = argparse.ArgumentParser(prog="tfdist", description="Convert single-GPU TensorFlow training scripts to Horovod, and prove they train.",
                                formatter_class=argparse.RawDescriptionHelpFormatter, epilog=EPILOG)
    p.add_argument("--version", action="version", version=f"tfdist {__version__}")
    sub = p.add_subparsers(dest="command", metavar="COMMAND")
    c = sub.add_parser("convert", help="convert a training script", formatter_class=argparse.RawDescriptionHelpFormatter, epilog=EPILOG)
    c.add_argument("paths", nargs="+", metavar="FILE", help="a .py file")
    c.add_argument("-o", "--output", metavar="OUT", help="write the converted script here (default: stdout)")
    c.add_argument("--backend", default="horovod", choices=sorted(BACKENDS))
    c.add_argument("--diff", action="store_true", help="print a unified diff instead of the converted code; write nothing")
    c.add_argument("--report", metavar="REPORT.json", help="write a JSON report of every file and change")
    c.add_argument("-q", "--quiet", action="store_true", help="only errors and the summary on stderr")
    an = sub.add_parser("analyze", help="explain which training pattern a script uses and why")
    an.add_argument("path", metavar="FILE")
    an.add_argument("--json", action="store_true")
    sub.add_parser("run", help="launch a (converted) script on N processes with horovodrun", add_help=False)
    sub.add_parser("verify", help="convert, run on N processes, and check the ranks trained correctly", add_help=False)
    return p


def main(argv: Optional[List[str]] = None) -> int:
    argv = list(sys.argv[1:] if argv is None else argv)
    if argv and argv[0] in ("run", "verify"):
        from .runtime import commands
        return (commands.run_main if argv[0] == "run" else commands.verify_main)(argv[1:])
    parser = build_parser()
    args = parser.parse_args(argv)
    if args.command == "convert":
        return cmd_convert(args)
    if args.command == "analyze":
        return cmd_analyze(args)
    parser.print_help()
    return EXIT_OK


def _exit_code(result: F.FileResult) -> int:
    if result.status == F.FAILED:
        return EXIT_BAD_INPUT
    if result.status == F.UNSUPPORTED or result.no_training:
        return EXIT_UNSUPPORTED
    return EXIT_OK


def write_atomic(path: str, data: bytes, mode_from: Optional[str] = None) -> None:
    """Write via a temporary file and rename: the target is never half-written."""
    directory = os.path.dirname(os.path.abspath(path))
    fd, tmp = tempfile.mkstemp(prefix=".tfdist-", suffix=".tmp", dir=directory)
    try:
        with os.fdopen(fd, "wb") as f:
            f.write(data)
        if mode_from and os.path.exists(mode_from):
            os.chmod(tmp, os.stat(mode_from).st_mode & 0o7777)
        os.replace(tmp, path)
    except BaseException:
        if os.path.exists(tmp):
            os.unlink(tmp)
        raise


def unified_diff(result: F.FileResult, original: str) -> str:
    new = result.code if result.code is not None else original
    return "".join(difflib.unified_diff(
        original.splitlines(keepends=True), new.splitlines(keepends=True),
        fromfile="a/" + result.path.lstrip("/"), tofile="b/" + result.path.lstrip("/")))


def summary_line(results: List[F.FileResult]) -> str:
    counts = {}
    for r in results:
        counts[r.status] = counts.get(r.status, 0) + 1
    parts = [f"{n} {s}" for s, n in sorted(counts.items())]
    changes = sum(len(r.changes) for r in results)
    warnings = sum(len(r.warnings) for r in results if r.status == F.CONVERTED)
    return f"tfdist: {', '.join(parts)}; {changes} changes, {warnings} warnings to review"


def cmd_convert(args) -> int:
    if len(args.paths) != 1 or os.path.isdir(args.paths[0]):
        try:
            from .project import cli_convert_many
        except ImportError:
            print("tfdist: give one .py file", file=sys.stderr)
            return EXIT_BAD_INPUT
        return cli_convert_many(args)
    path = args.paths[0]
    result = convert_path(path, args.backend)
    err = sys.stderr
    if not args.quiet or result.status in (F.FAILED, F.UNSUPPORTED):
        for line in result.human_lines():
            print(line, file=err)
    if result.status == F.CONVERTED or result.status in (F.UNCHANGED, F.ALREADY):
        original = load(path).module.code
        if args.diff:
            sys.stdout.write(unified_diff(result, original))
        elif args.output:
            write_atomic(args.output, result.data, mode_from=path)
        else:
            sys.stdout.write(result.code)
    print(f"{summary_line([result])} (pattern: {result.pattern})", file=err)
    if args.report:
        with open(args.report, "w") as f:
            json.dump({"files": [result.to_json()]}, f, indent=2)
    return _exit_code(result)


def cmd_analyze(args) -> int:
    try:
        src = load(args.path)
    except BadInput as e:
        print(str(e), file=sys.stderr)
        return EXIT_BAD_INPUT
    a, evidence = analyse(src)
    from .engine import patterns as P
    pattern = P.join_all(e.pattern for e in evidence)
    hierarchy = [f.describe() for f in a.classes.values() if f.kinds]
    types = a.describe_types()
    if args.json:
        json.dump({"path": args.path, "pattern": pattern,
                   "patterns": sorted({e.pattern for e in evidence}),
                   "evidence": [e.__dict__ for e in evidence], "hierarchy": hierarchy, "types": types},
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
    if pattern == P.UNKNOWN:
        print("  no training loop found")
    return EXIT_OK
