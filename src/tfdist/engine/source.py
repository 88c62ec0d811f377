"""Reading and parsing user files, with bad input turned into clear errors."""
from __future__ import annotations

import os
from dataclasses import dataclass
from typing import Optional

import libcst as cst


class BadInput(Exception):
    """The input cannot be read or parsed. ``line`` is 1-based when known."""

    def __init__(self, path: str, message: str, line: Optional[int] = None):
        super().__init__(message)
        self.path = path
        self.message = message
        self.line = line

    def __str__(self) -> str:
        where = f"{self.path}:{self.line}" if self.line else self.path
        return f"{where}: {self.message}"


@dataclass
class SourceFile:
    path: str
    data: bytes  # exactly as read; written back untouched when unchanged
    module: cst.Module


def read_bytes(path: str) -> bytes:
    if path != "-" and not os.path.exists(path):
        raise BadInput(path, "no such file")
    if os.path.isdir(path):
        raise BadInput(path, "is a directory (give a .py file; trees are converted with a directory argument)")
    try:
        with open(path, "rb") as f:
            return f.read()
    except OSError as e:
        raise BadInput(path, f"cannot read: {e.strerror or e}") from None


def parse(path: str, data: bytes) -> cst.Module:
    """Parse bytes with LibCST, honouring a coding cookie and a BOM."""
    if not data.strip():
        raise BadInput(path, "empty file: nothing to convert")
    if b"\x00" in data:
        raise BadInput(path, "binary file (contains NUL bytes)")
    _python_parse(path, data)
    try:
        # LibCST decodes bytes itself (PEP 263 cookie, BOM) and remembers the
        # encoding so code generation writes the same bytes back.
        return cst.parse_module(data)
    except cst.ParserSyntaxError as e:
        msg = e.message.strip().splitlines()[0] if e.message else "syntax error"
        hint = ""
        if looks_like_python2(data):
            hint = " (this looks like Python 2 code; tfdist reads Python 3)"
        raise BadInput(path, f"syntax error: {msg}{hint}", line=e.raw_line) from None
    except (UnicodeDecodeError, LookupError, SyntaxError) as e:
        raise BadInput(path, f"cannot decode: {e}") from None
    except RecursionError:
        raise BadInput(path, "too deeply nested to parse") from None


# Python's own messages when a file exceeds its nesting limits.
_NESTING_LIMITS = ("too many nested", "too many levels of indentation", "too complex", "nested too deeply")


def _python_parse(path: str, data: bytes) -> None:
    """Python's own parser first: it is cheap (under 1% of a conversion),
    its messages are the ones users know, and it fails cleanly on nesting
    that makes LibCST's native parser overflow the C stack (a segfault)."""
    import ast

    try:
        compile(data, path, "exec", ast.PyCF_ONLY_AST, dont_inherit=True)
    except (RecursionError, MemoryError):
        raise BadInput(path, "too deeply nested to parse (Python's own parser gives up too)") from None
    except SyntaxError as e:
        msg = str(e.msg or "syntax error")
        if any(k in msg for k in _NESTING_LIMITS):
            raise BadInput(path, f"too deeply nested to parse: {msg}", line=e.lineno) from None
        if "unicode error" in msg or "encoding" in msg or "decode" in msg:
            raise BadInput(path, f"cannot decode: {msg}", line=e.lineno) from None
        hint = " (this looks like Python 2 code; tfdist reads Python 3)" if looks_like_python2(data) else ""
        raise BadInput(path, f"syntax error: {msg}{hint}", line=e.lineno) from None
    except (ValueError, UnicodeError, OverflowError, LookupError) as e:
        raise BadInput(path, f"cannot decode: {e}") from None


def looks_like_python2(data: bytes) -> bool:
    """A ``print x`` / ``exec "..."`` statement or ``except E, e:``: Python 2."""
    import re

    return bool(re.search(rb"^\s*(print\s+[\"'\w]|exec\s+[\"'])", data, re.M)) or b"except Exception, " in data


def load(path: str, data: Optional[bytes] = None) -> SourceFile:
    if data is None:
        data = read_bytes(path)
    return SourceFile(path=path, data=data, module=parse(path, data))
