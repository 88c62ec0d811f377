"""What ``tfdist run``, ``verify`` and ``job`` share on the command line:
exit codes, the engines they launch, the argument parser that exits 3 on bad
input, value types, error lines, and writing a report atomically."""
from __future__ import annotations

import argparse
import os
import sys
import tempfile

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
