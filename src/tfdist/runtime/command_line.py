"""What ``tfdist run``, ``verify`` and ``job`` share on the command line:
exit codes, the engines they launch, the argument parser that exits 3 on bad
input, value types, error lines, and writing a report atomically."""
from __future__ import annotations

import argparse
import os
import sys
import tempfile

from ..engine_choice import written_for

EXIT_OK = 0
EXIT_FAIL = 1
EXIT_BAD_INPUT = 3

#: Engines ``tfdist run`` / ``verify`` can launch (the runtime side of
#: tfdist.backends; this module must not import TensorFlow).
BACKENDS = ("horovod", "tf-distribute")


class Parser(argparse.ArgumentParser):
    """argparse exits 2 on usage errors; tfdist uses 3 for bad input."""

    def error(self, message):
        self.print_usage(sys.stderr)
        self.exit(EXIT_BAD_INPUT, f"{self.prog}: error: {message}\n")


def optional_remainder(action: argparse.Action) -> None:
    # argparse lists a REMAINDER positional as "required" in its error message
    # although it matches nothing; ARGS is optional.
    action.required = False


def positive_float(text: str) -> float:
    value = float(text)
    if value < 0:
        raise argparse.ArgumentTypeError("must be >= 0")
    return value


def port(text: str) -> int:
    value = int(text)
    if not 1 <= value <= 65535:
        raise argparse.ArgumentTypeError("must be a TCP port (1-65535)")
    return value


def positive_int(text: str) -> int:
    value = int(text)
    if value < 1:
        raise argparse.ArgumentTypeError("must be >= 1")
    return value


def err(prog: str, message: str) -> None:
    sys.stderr.write(f"{prog}: error: {message}\n")
    sys.stderr.flush()


def write_text_atomic(path: str, text: str) -> None:
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


ALLOW_UNCONVERTED_HELP = ("run a script that shows no engine as it is: every process then trains it whole, on its "
                          "own (N separate trainings, nothing averaged)")


def script_engine(prog: str, path: str, backend: str | None, allow_unconverted: bool, processes: str) -> tuple:
    """What a launched script is, checked before anything starts: (ok, the
    engine it was written for or None). Refused (ok False, the reason on
    stderr): a file that is no Python (a syntax error, with its line), a
    script converted for the other engine than ``backend``, and -- unless
    ``allow_unconverted`` -- a script converted for neither, which would run
    as ``processes`` independent trainings."""
    try:
        with open(path, encoding="utf-8", errors="replace") as fh:
            text = fh.read()
    except OSError as exc:
        err(prog, f"cannot read {path}: {exc.strerror or exc}")
        return False, None
    try:
        compile(text, path, "exec", dont_inherit=True)
    except SyntaxError as exc:
        err(prog, f"{path}:{exc.lineno or '?'}: syntax error: {exc.msg}; nothing started")
        return False, None
    except (ValueError, RecursionError, MemoryError) as exc:
        err(prog, f"{path}: cannot be compiled ({type(exc).__name__}); nothing started")
        return False, None
    found = written_for(text)
    if backend and found and backend != found:
        shows = "imports horovod" if found == "horovod" else "builds a tf.distribute strategy"
        err(prog, f"{path} is a {found} script (it {shows}), not --backend {backend}: give --backend {found}, "
                  f"or convert the original with --backend {backend}")
        return False, None
    if found is None and not allow_unconverted:
        err(prog, f"{path} is not a converted script (it neither imports horovod nor builds a tf.distribute "
                  f"strategy): {processes} would each train it whole, on their own -- separate trainings, nothing "
                  f"averaged, each writing the same files. Convert it first (tfdist convert SCRIPT -o "
                  f"SCRIPT_dist.py), or pass --allow-unconverted to run it as it is")
        return False, None
    return True, found
