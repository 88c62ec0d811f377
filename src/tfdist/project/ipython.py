"""IPython syntax in a notebook's code cells, as tfdist reads it.

What is not Python (``%matplotlib inline``, ``!pip install x``, ``files =
!ls``, ``obj?``, a ``%%time`` first line, a one-line automagic ``pip install
x``) is masked with a placeholder statement before parsing and restored
afterwards (only at the start of a logical line, as IPython does). The
statement a ``%time`` line runs (``%time history = model.fit(...)``, which
IPython runs in the notebook's namespace) is Python and is read as such:
it gets the prefix back on output while it stays one line. A cell
whose lines all start with the same indent is dedented for parsing (IPython
strips that indent) and gets it back on output.
"""
from __future__ import annotations

import difflib
import re
from typing import List, Optional, Tuple

PY_CELL_MAGICS = {"time", "timeit", "capture", "prun", "debug"}
# IPython 9's line magics (with the shell aliases it defines on POSIX, and
# those ipykernel adds) that IPython's automagic runs without their ``%``.
AUTOMAGIC_NAMES = {
    "alias", "alias_magic", "autoawait", "autocall", "automagic", "bookmark", "cat", "cd", "clear", "code_wrap",
    "colors", "conda", "config", "connect_info", "cp", "debug", "dhist", "dirs", "doctest_mode", "ed", "edit",
    "env", "gui", "hist", "history", "killbgscripts", "ldir", "less", "lf", "lk", "ll", "load", "load_ext",
    "loadpy", "logoff", "logon", "logstart", "logstate", "logstop", "ls", "lsmagic", "lx", "macro", "magic",
    "mamba", "man", "matplotlib", "micromamba", "mkdir", "more", "mv", "notebook", "page", "pastebin", "pdb",
    "pdef", "pdoc", "pfile", "pinfo", "pinfo2", "pip", "popd", "pprint", "precision", "prun", "psearch", "psource",
    "pushd", "pwd", "pycat", "pylab", "qtconsole", "quickref", "recall", "rehashx", "reload_ext", "rep", "rerun",
    "reset", "reset_selective", "rm", "rmdir", "run", "save", "sc", "set_env", "sx", "system", "tb", "time",
    "timeit", "unalias", "unload_ext", "uv", "who", "who_ls", "whos", "xdel", "xmode",
}
MAGIC = "__tfdist_magic_{}__"
_MAGIC_LINE = re.compile(r"^([ \t]*)__tfdist_magic_(\d+)__[ \t]*$", re.M)
# ``%time STMT`` (also ``% time STMT``): STMT runs, its names bound in the notebook's namespace
_TIMED = re.compile(r"^([ \t]*)(%[ \t]*time[ \t]+)(\S.*?)([ \t]*)$")
TIMED_MARK = "  # __tfdist_time_{}__"
_TIMED_LINE = re.compile(r"^([ \t]*)(.*)  # __tfdist_time_(\d+)__$", re.M)
_LINE_MAGIC = re.compile(
    r"^[ \t]*(?:[%!?]"  # %magic, !shell, ?help
    r"|[A-Za-z_][\w.]*[ \t]*\?{1,2}[ \t]*$"  # obj? / obj??
    r"|[A-Za-z_][\w.]*(?:[ \t]*,[ \t]*[A-Za-z_][\w.]*)*[ \t]*=[ \t]*[!%])"  # x = !ls / x = %sx ls
)


def python_error(source: str) -> Optional[str]:
    """Why Python cannot compile a cell ("IndentationError: unexpected
    indent, line 2"), or None. Jupyter compiles a cell whole before running
    it, so such a cell runs nothing and defines nothing."""
    try:
        compile(source, "<cell>", "exec", flags=0x400, dont_inherit=True)  # ast.PyCF_ONLY_AST
    except SyntaxError as e:  # IndentationError and TabError are SyntaxErrors
        return f"{type(e).__name__}: {e.msg}, line {e.lineno}"
    except (ValueError, RecursionError) as e:
        return f"{type(e).__name__}: {e}"
    return None


def automagic_cell(source: str) -> bool:
    """Whether IPython runs this cell as a line magic written without its
    ``%`` (automagic: ``pip install x``, ``ls data/``). IPython does so only
    for a cell of one line (blank lines before it aside); in a longer cell
    the same line is a syntax error there too. A line that is Python is left
    to Python: it defines nothing either way."""
    lines = source.lstrip(" \t\n").splitlines()
    if len(lines) != 1:
        return False
    first = re.match(r"([A-Za-z_]\w*)(?:[ \t]|$)", lines[0])
    return bool(first) and first.group(1) in AUTOMAGIC_NAMES and python_error(lines[0]) is not None


def mask(source: str, magics: List[str]) -> Optional[str]:
    """Source with IPython-only lines replaced by placeholders; None for a non-Python cell.

    Like IPython, only a line that starts a logical line can be a magic: a
    line inside open brackets or a multi-line string, or after a backslash
    continuation (``  %(a, b))`` continuing a ``"..." %`` formatting), is Python.
    """
    automagic = automagic_cell(source)
    lines = source.splitlines(keepends=True)
    out = []
    i = 0
    first = lines[0].strip() if lines else ""
    if first.startswith("%%"):
        name = first[2:].split(None, 1)[0] if first[2:].strip() else ""
        if name not in PY_CELL_MAGICS:
            return None
    state = _LineState()
    while i < len(lines):
        line = lines[i]
        timed = timed_statement(line) if state.at_logical_start() and not automagic else None
        if timed is not None:
            indent, prefix, stmt, trailing = timed
            end = line[len(line.rstrip("\r\n")):]
            state.feed(stmt)
            magics.append(prefix + "\0" + trailing)  # given back as written
            out.append(f"{indent}{stmt}{TIMED_MARK.format(len(magics) - 1)}{end}")
        elif state.at_logical_start() and (_LINE_MAGIC.match(line) or automagic and line.strip()):
            group = [line]
            while group[-1].rstrip("\r\n").endswith("\\") and i + 1 < len(lines):
                i += 1
                group.append(lines[i])
            indent = re.match(r"[ \t]*", line).group(0)
            body = "".join(group)
            end = "\n" if body.endswith("\n") else ""
            magics.append(body[len(indent):len(body) - len(end)] if end else body[len(indent):])
            out.append(f"{indent}{MAGIC.format(len(magics) - 1)}{end}")
        else:
            state.feed(line)
            out.append(line)
        i += 1
    return "".join(out)


class _LineState:
    """Where a line starts: inside brackets, a multi-line string, or after a
    backslash continuation (a cheap scan; no tokenizer, which IPython-only
    lines would stop)."""

    def __init__(self):
        self.depth = 0
        self.quote: Optional[str] = None  # the open string's quote (''', ", ...)
        self.continued = False

    def at_logical_start(self) -> bool:
        return self.depth == 0 and self.quote is None and not self.continued

    def feed(self, line: str) -> None:
        text = line.rstrip("\r\n")
        i, n = 0, len(text)
        self.continued = False
        while i < n:
            c = text[i]
            if self.quote is not None:
                if c == "\\":
                    i += 2
                    continue
                if text.startswith(self.quote, i):
                    i += len(self.quote)
                    self.quote = None
                    continue
                i += 1
                continue
            if c == "#":
                break
            if c in "\"'":
                self.quote = c * 3 if text.startswith(c * 3, i) else c
                i += len(self.quote)
                continue
            if c in "([{":
                self.depth += 1
            elif c in ")]}":
                self.depth = max(0, self.depth - 1)
            elif c == "\\" and i == n - 1:
                self.continued = True
            i += 1
        if self.quote is not None and len(self.quote) == 1 and not text.endswith("\\"):
            self.quote = None  # an unterminated one-line string: a syntax error Python will report


def dedent(source: str) -> Tuple[str, str]:
    """IPython's leading-indent cleanup: when the cell's first non-blank line
    is indented, that indent is removed from every line starting with it.
    Returns (dedented source, removed indent)."""
    lines = source.splitlines(keepends=True)
    first = next((ln for ln in lines if ln.strip()), None)
    m = re.match(r"[ \t]+", first) if first is not None else None
    if not m:
        return source, ""
    prefix = m.group(0)
    return "".join(ln[len(prefix):] if ln.startswith(prefix) else ln for ln in lines), prefix


def reindent(new: str, dedented: str, original: str, prefix: str) -> str:
    """The converted text of a dedented cell with its indent put back: lines
    the conversion kept are the original lines, byte for byte; new lines get
    the cell's indent (IPython strips it again)."""
    if not prefix:
        return new
    old_lines = dedented.splitlines(keepends=True)
    orig_lines = original.splitlines(keepends=True)
    new_lines = new.splitlines(keepends=True)
    out: List[str] = []
    matcher = difflib.SequenceMatcher(a=old_lines, b=new_lines, autojunk=False)
    for tag, i1, i2, j1, j2 in matcher.get_opcodes():
        if tag == "equal":
            out += orig_lines[i1:i2]
        else:
            out += [prefix + ln if ln.strip() else ln for ln in new_lines[j1:j2]]
    return "".join(out)


def timed_statement(line: str) -> Optional[Tuple[str, str, str, str]]:
    """(indent, ``%time `` as written, statement, trailing blanks) of a
    ``%time STMT`` line whose STMT is one Python statement on that line,
    else None."""
    m = _TIMED.match(line.rstrip("\r\n"))
    if m is None or m.group(3).endswith("\\") or python_error(m.group(3)) is not None:
        return None
    return m.group(1), m.group(2), m.group(3), m.group(4)


def unmask(text: str, magics: List[str]) -> str:
    text = _TIMED_LINE.sub(lambda m: _retime(m, magics), text)
    return _MAGIC_LINE.sub(lambda m: m.group(1) + magics[int(m.group(2))], text)


def _retime(m, magics: List[str]) -> str:
    """A timed statement's line gets its ``%time`` back while the statement
    is still that one line (a conversion may have guarded it: ``if ...:``
    then the indented line); one the conversion spread over lines runs
    untimed."""
    indent, stmt = m.group(1), m.group(2)
    prefix, _, trailing = magics[int(m.group(3))].partition("\0")
    return f"{indent}{prefix}{stmt}{trailing}" if python_error(stmt) is None else indent + stmt
