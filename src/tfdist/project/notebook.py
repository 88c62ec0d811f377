"""Jupyter notebooks: converted cell by cell, everything else kept byte for byte.

The code cells are joined, in order, into one module (a marker statement
``__tfdist_cell_N__`` between cells), so the analysis sees the whole
notebook: a model built in cell 2 and fitted in cell 5 is one program. The
converted module is split back at the markers. Only the ``source`` of a
changed cell is rewritten, *inside the original JSON text*: markdown cells,
outputs, metadata, cell ids, key order and indentation of everything else
stay byte-identical.

IPython syntax that is not Python is masked before parsing and restored
afterwards, and an indented cell dedented and indented again (project/ipython.py).
Cells run by a non-Python cell magic (``%%bash``, ``%%writefile``...) are left
out of the module and never touched.
"""
from __future__ import annotations

import difflib
import json
import re
from dataclasses import dataclass, field
from typing import Dict, List, Optional, Tuple, Union

from ..engine import findings as F
from ..engine.analysis import ProjectContext
from ..engine.source import looks_like_python2
from ..assembly import convert_path
from ..options import Options
from .ipython import automagic_cell, dedent, mask, python_error, reindent, timed_statement, unmask

MARKER = "__tfdist_cell_{}__"
_MARKER_LINE = re.compile(r"^__tfdist_cell_(\d+)__[ \t]*\n?", re.M)


class NotebookError(Exception):
    def __init__(self, message: str, line: Optional[int] = None):
        super().__init__(message)
        self.message = message
        self.line = line


# ------------------------------------------------------------- JSON spans
def _source_spans(text: str) -> Dict[int, Tuple[int, int]]:
    """Character spans of ``cells[i]["source"]`` values in the notebook text.

    Walks the top-level object and the cells array; every other value is
    skipped with the C JSON scanner, so big outputs cost little.
    """
    dec = json.JSONDecoder()
    scan = dec.scan_once
    ws = re.compile(r"[ \t\n\r]*")

    def skip(i):
        return ws.match(text, i).end()

    def obj_items(i):
        """Yield (key, value_start) for an object starting at text[i] == '{'; returns end via StopIteration value."""
        assert text[i] == "{"
        i = skip(i + 1)
        if text[i] == "}":
            return i + 1
        while True:
            key, i = scan(text, i)
            i = skip(i)
            assert text[i] == ":"
            i = skip(i + 1)
            end = yield key, i
            i = skip(end)
            if text[i] == ",":
                i = skip(i + 1)
                continue
            assert text[i] == "}"
            return i + 1

    spans: Dict[int, Tuple[int, int]] = {}
    i = skip(0)
    gen = obj_items(i)
    try:
        key, vi = next(gen)
        while True:
            if key == "cells" and text[vi] == "[":
                j = skip(vi + 1)
                n = 0
                if text[j] == "]":
                    end = j + 1
                else:
                    while True:
                        if text[j] == "{":
                            cg = obj_items(j)
                            try:
                                ck, cv = next(cg)
                                while True:
                                    _, cend = scan(text, cv)
                                    if ck == "source":
                                        spans[n] = (cv, cend)
                                    ck, cv = cg.send(cend)
                            except StopIteration as stop:
                                j = stop.value
                        else:
                            _, j = scan(text, j)
                        n += 1
                        j = skip(j)
                        if text[j] == ",":
                            j = skip(j + 1)
                            continue
                        end = j + 1
                        break
            else:
                _, end = scan(text, vi)
            key, vi = gen.send(end)
    except StopIteration:
        pass
    return spans


def _indent_unit(text: str) -> str:
    m = re.search(r"\n([ \t]+)\S", text)
    return m.group(1) if m else " "


def _format_source(new: str, old_value: str, old_json, text: str, start: int, ensure_ascii: bool) -> str:
    """A JSON value for a cell source, in the style of the value it replaces."""
    if isinstance(old_json, str):
        return json.dumps(new, ensure_ascii=ensure_ascii)
    lines = new.splitlines(keepends=True)
    if not lines:
        return "[]"
    m = re.match(r"\[([ \t]*\n?)([ \t]*)", old_value)
    line_start = text.rfind("\n", 0, start) + 1
    key_indent = re.match(r"[ \t]*", text[line_start:start]).group(0)
    if m and old_value.strip() != "[]" and (m.group(1) or m.group(2)):
        nl = "\n" if "\n" in m.group(1) else ""
        inner = m.group(2) if nl else ""
        closing = re.search(r"([ \t]*\n?[ \t]*)\]$", old_value).group(1)
    else:
        nl, inner, closing = "\n", key_indent + _indent_unit(text), "\n" + key_indent
    sep = "," + (nl + inner if nl else " ")
    items = [json.dumps(ln, ensure_ascii=ensure_ascii) for ln in lines]
    head = "[" + (nl + inner if nl else "")
    return head + sep.join(items) + (closing if nl else "") + "]"


# ------------------------------------------------------------- masking
@dataclass
class _Cell:
    index: int  # position among all cells (0-based)
    source: str  # original text
    masked: str = ""
    dedented: str = ""  # source without IPython's leading indent
    indent: str = ""  # the leading indent removed
    missing_newline: bool = False
    crlf: bool = False  # the cell ends its lines with "\r\n" (converted with "\n")
    start_line: int = 0  # first line in the joined module (1-based)
    new: Optional[str] = None
    unparsable: Optional[str] = None  # why Python cannot compile it: left out, never rewritten


_DEFINED = re.compile(r"^[ \t]*(?:def|class)[ \t]+([A-Za-z_]\w*)|^[ \t]*([A-Za-z_]\w*(?:[ \t]*,[ \t]*[A-Za-z_]\w*)*)"
                      r"[ \t]*(?:\[[^\]]*\])?[ \t]*=(?!=)", re.M)


def _read_later(cells: List["_Cell"]) -> bool:
    """Does a later cell read a name that only a cell Python cannot compile
    would have defined by then (``x_train = # YOUR CODE HERE``, then
    ``fit(x_train, ...)``)? The names are read off that cell's lines (it has
    no syntax tree); each later cell is parsed, in order: a name it reads
    before any cell since has bound it again is missing when the notebook
    runs. A read inside a function counts as a read (conservative)."""
    import ast
    for k, cell in enumerate(cells):
        if cell.unparsable is None:
            continue
        wanted = set()
        for m in _DEFINED.finditer(cell.source):
            wanted.update(n.strip() for n in (m.group(1) or m.group(2)).split(","))
        for later in cells[k + 1:]:
            if not wanted:
                break
            if later.unparsable is not None:
                continue
            try:
                tree = ast.parse(later.masked)
            except SyntaxError:  # pragma: no cover - compiled above
                return True
            loads: Dict[str, Tuple[int, int]] = {}
            stores: Dict[str, Tuple[int, int]] = {}

            def seen(where, name, node):  # the first place in the cell a wanted name is read / bound
                if name in wanted:
                    where[name] = min(where.get(name, (1 << 30, 0)), (node.lineno, node.col_offset))

            for node in ast.walk(tree):
                if isinstance(node, ast.Name):
                    seen(loads if isinstance(node.ctx, ast.Load) else stores, node.id, node)
                elif isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef)):
                    seen(stores, node.name, node)
                elif isinstance(node, (ast.Import, ast.ImportFrom)):
                    for alias in node.names:
                        seen(stores, (alias.asname or alias.name).split(".")[0], node)
            for name in list(wanted):
                if name in loads and (name not in stores or loads[name] < stores[name]):
                    return True
                if name in stores:
                    wanted.discard(name)
    return False


# ------------------------------------------------------------- result
@dataclass
class NotebookResult:
    path: str
    result: F.FileResult  # of the joined module; data = notebook bytes
    cell_of_line: List[Tuple[int, int]] = field(default_factory=list)  # (start_line, cell number 1-based)
    changed: List[Tuple[int, str, str]] = field(default_factory=list)  # (cell number, old, new)
    file_lines: bool = False  # error_line is a line of the .ipynb file (bad JSON), not of a cell

    def locate(self, line: Optional[int]) -> Tuple[Optional[int], Optional[int]]:
        """(cell number, line in cell) of a line of the joined module."""
        if not line:
            return None, line
        cell, start = None, 1
        for s, c in self.cell_of_line:
            if s <= line:
                cell, start = c, s
        return cell, (line - start + 1 if cell is not None else line)

    def where(self, line: Optional[int]) -> str:
        if self.file_lines:
            return f"{self.path}:{line}" if line else self.path
        cell, ln = self.locate(line)
        if cell is None:
            return self.path
        return f"{self.path} [cell {cell}]:{ln}" if ln else f"{self.path} [cell {cell}]"

    def human_lines(self) -> List[str]:
        r = self.result
        out = []
        for f in [*r.changes, *r.warnings]:
            out.append(f"{self.where(f.line)}:{f.col}: {f.level} {f.rule}: {f.message}")
        if r.error:
            out.append(f"{self.where(r.error_line)}: ERROR {r.status}: {r.error}")
        return out

    def to_json(self) -> dict:
        d = self.result.to_json()
        for key, items in (("changes", self.result.changes), ("warnings", self.result.warnings)):
            for entry, f in zip(d[key], items):
                cell, ln = self.locate(f.line)
                entry["cell"], entry["line"] = cell, ln
                if "end_line" in entry:
                    entry["end_line"] = self.locate(f.end_line)[1]
        if self.result.error_line and not self.file_lines:
            d["error_cell"], d["error_line"] = self.locate(self.result.error_line)
        for e in d.get("evidence", []):
            e["cell"], e["line"] = self.locate(e["line"])
        d["changed_cells"] = [c for c, _, _ in self.changed]
        return d

    def diff(self) -> str:
        out = []
        for cell, old, new in self.changed:
            name = f"{self.path.lstrip('/')} [cell {cell}]"
            out.append("".join(difflib.unified_diff(
                _lines(old), _lines(new), fromfile="a/" + name, tofile="b/" + name)))
        return "".join(out)


def _lines(s: str) -> List[str]:
    lines = s.splitlines(keepends=True)
    if lines and not lines[-1].endswith("\n"):
        lines[-1] += "\n\\ No newline at end of cell\n"
    return lines


def _failed(path: str, message: str, line: Optional[int] = None) -> NotebookResult:
    return NotebookResult(path, F.FileResult(path=path, status=F.FAILED, error=message, error_line=line),
                          file_lines=True)


def convert_notebook(path: str, data: bytes, backend: Union[Options, str] = "horovod",
                     project: Optional[ProjectContext] = None) -> NotebookResult:
    bom = data.startswith(b"\xef\xbb\xbf")
    try:
        text, nb = _load(data, bom)
    except NotebookError as e:
        return _failed(path, e.message, e.line)
    lang = _language(nb)
    if not isinstance(lang, str) or lang.lower() != "python":
        r = F.FileResult(path=path, status=F.UNCHANGED, data=data)
        r.warnings.append(F.Finding("notebook", 1, 1, F.INFO, f"a {lang} notebook: left unchanged"))
        return NotebookResult(path, r)
    magics: List[str] = []
    try:
        cells = _code_cells(nb, magics)
    except NotebookError as e:
        return _failed(path, e.message, e.line)
    if not cells:
        return NotebookResult(path, F.FileResult(path=path, status=F.UNCHANGED, data=data))
    module, cell_of_line, marker_lines = _join(cells)
    if not module.strip():
        return NotebookResult(path, F.FileResult(path=path, status=F.UNCHANGED, data=data), cell_of_line)
    # The markers are barriers: a block the conversion opens (a replication
    # scope, a guard) closes in the cell that opened it.
    result = convert_path(path, backend, project, data=module.encode("utf-8"), boundaries=marker_lines)
    out = NotebookResult(path, result, cell_of_line)
    if _fails_as_written(result, cells):
        return out
    result.warnings.sort(key=lambda f: (f.line or 0, f.col or 0))
    if result.status == F.FAILED and result.error and result.error.startswith("empty file"):
        result.status, result.error = F.UNCHANGED, None
    if result.status != F.CONVERTED:
        result.data = data if result.status in (F.UNCHANGED, F.ALREADY) else None
        result.code = None
        return out
    try:
        changed, new_text = _rewrite(cells, magics, result.code, text, nb)
    except NotebookError as e:
        return _refused(out, e.message)
    out.changed = [(c.index + 1, c.source, c.new) for c in changed]
    result.data = (b"\xef\xbb\xbf" if bom else b"") + new_text.encode("utf-8")
    result.code = None
    if not changed:
        result.status = F.UNCHANGED
        result.data = data
    return out


def _load(data: bytes, bom: bool) -> Tuple[str, dict]:
    """The notebook's text and its JSON; NotebookError when it is no notebook tfdist can read."""
    try:
        text = data[3:].decode("utf-8") if bom else data.decode("utf-8")
    except UnicodeDecodeError as e:
        raise NotebookError(f"cannot decode notebook as UTF-8: {e.reason} at byte {e.start}") from None
    if not text.strip():
        raise NotebookError("empty file: nothing to convert")
    try:
        nb = json.loads(text)
    except json.JSONDecodeError as e:
        raise NotebookError(f"invalid notebook JSON: {e.msg} (column {e.colno})", e.lineno) from None
    except RecursionError:
        raise NotebookError("invalid notebook JSON: too deeply nested") from None
    if not isinstance(nb, dict) or not isinstance(nb.get("cells"), list):
        if isinstance(nb, dict) and "worksheets" in nb:
            raise NotebookError("nbformat 3 notebooks are not supported (open and save it with Jupyter to upgrade to nbformat 4)")
        raise NotebookError("not a Jupyter notebook (no \"cells\" list)")
    return text, nb


def _language(nb: dict):
    """The notebook's kernel language (Python when it names none)."""
    return ((nb.get("metadata") or {}).get("kernelspec") or {}).get("language") or \
        ((nb.get("metadata") or {}).get("language_info") or {}).get("name") or "python"


def _code_cells(nb: dict, magics: List[str]) -> List[_Cell]:
    """The code cells Python runs, IPython syntax masked (into ``magics``);
    NotebookError for a cell whose source is not text."""
    cells: List[_Cell] = []
    for i, c in enumerate(nb["cells"]):
        if not isinstance(c, dict) or c.get("cell_type") != "code":
            continue
        src = c.get("source", "")
        if isinstance(src, list):
            if not all(isinstance(x, str) for x in src):
                raise NotebookError(f"cell {i + 1}: source is not text")
            src = "".join(src)
        elif not isinstance(src, str):
            raise NotebookError(f"cell {i + 1}: source is not text")
        # a cell written with Windows line ends: converted with "\n" (the
        # cells are joined into one module, which must end its lines alike)
        # and written back with its own
        crlf = "\r\n" in src
        if crlf:
            src = src.replace("\r\n", "\n")
        dedented, indent = dedent(src)
        masked = mask(dedented, magics)
        if masked is None:
            continue  # %%bash and friends
        cell = _Cell(i, src, masked, dedented=dedented, indent=indent, crlf=crlf)
        cell.unparsable = python_error(masked)
        if cell.unparsable is not None:
            # read as Jupyter runs it (nothing): a placeholder holds its place, the cell is never rewritten
            cell.masked = "pass\n"
        if cell.masked and not cell.masked.endswith("\n"):
            cell.masked += "\n"
            cell.missing_newline = True
        cells.append(cell)
    return cells


def _join(cells: List[_Cell]) -> Tuple[str, List[Tuple[int, int]], List[int]]:
    """The cells as one module, a marker line between two: (module, (first
    line, cell number) of each cell, the marker lines)."""
    parts = []
    line = 1
    cell_of_line = []
    marker_lines = []
    for k, cell in enumerate(cells):
        if k:
            parts.append(MARKER.format(k) + "\n")
            marker_lines.append(line)
            line += 1
        cell.start_line = line
        cell_of_line.append((line, cell.index + 1))
        parts.append(cell.masked)
        line += cell.masked.count("\n")
    return "".join(parts), cell_of_line, marker_lines


def _fails_as_written(result: F.FileResult, cells: List[_Cell]) -> bool:
    """Whether a cell Python cannot compile makes the notebook fail as
    written (the result then says so); otherwise each such cell gets a
    warning when the rest converted."""
    broken = [c for c in cells if c.unparsable is not None]
    if broken and (result.status != F.CONVERTED or _read_later(cells)
                   or any(looks_like_python2(c.source.encode("utf-8")) for c in broken)):
        # nothing converted around it, or the rest reads what it was to define (a blank left to fill in:
        # ``x_train = # YOUR CODE HERE``), or Python 2: the notebook does not run as written
        result.status, result.error, result.error_line = F.FAILED, f"syntax error: {broken[0].unparsable}", \
            broken[0].start_line
        result.data = result.code = None
        result.changes, result.warnings = [], []
        return True
    for cell in broken:
        if result.status == F.CONVERTED:
            result.warnings.append(F.Finding("notebook", cell.start_line, 1, F.WARNING, (
                f"this cell is not valid Python ({cell.unparsable}): left as written and read as Jupyter runs it, "
                "defining nothing; if your kernel runs it (a newer Python), fix it and convert again, or convert "
                "its code by hand")))
    return False


def _rewrite(cells: List[_Cell], magics: List[str], code: str, text: str, nb: dict) -> Tuple[List[_Cell], str]:
    """The converted module split back at the markers into its cells: (the
    cells it changed, the notebook's text with their sources rewritten);
    NotebookError when the markers moved."""
    pieces = _MARKER_LINE.split(code)
    chunks = [pieces[0]]
    order = [0]
    for j in range(1, len(pieces), 2):
        order.append(int(pieces[j]))
        chunks.append(pieces[j + 1])
    if order != list(range(len(cells))):
        raise NotebookError("internal error: notebook cell markers moved during conversion; nothing written")
    for cell, chunk in zip(cells, chunks):
        if cell.unparsable is not None:
            continue  # never rewritten
        if cell.missing_newline and chunk.endswith("\n"):
            chunk = chunk[:-1]
        new = unmask(chunk, magics)
        if new != cell.dedented:
            cell.new = reindent(new, cell.dedented, cell.source, cell.indent)
    changed = [c for c in cells if c.new is not None]
    return changed, _rewritten_json(text, nb, changed)


def _rewritten_json(text: str, nb: dict, changed: List[_Cell]) -> str:
    """The notebook's text with the changed cells' sources replaced in place,
    everything else byte for byte; NotebookError when that fails."""
    spans = _source_spans(text)
    ensure_ascii = not any(ord(ch) > 127 for ch in text) and "\\u" in text
    new_text = text
    for c in sorted(changed, key=lambda c: -c.index):
        if c.index not in spans:
            raise NotebookError(f"internal error: cell {c.index + 1} source not found in the JSON; nothing written")
        s, e = spans[c.index]
        written = c.new.replace("\n", "\r\n") if c.crlf else c.new
        value = _format_source(written, text[s:e], nb["cells"][c.index].get("source"), text, s, ensure_ascii)
        new_text = new_text[:s] + value + new_text[e:]
    try:
        if json.loads(new_text)["cells"][changed[0].index]["source"] is None:  # pragma: no cover
            raise ValueError
    except (ValueError, KeyError, IndexError) as e:  # pragma: no cover - a bug here
        raise NotebookError(f"internal error: rewritten notebook is not valid JSON ({e}); nothing written") from None
    return new_text


def _refused(out: NotebookResult, message: str) -> NotebookResult:
    r = out.result
    r.status, r.error, r.error_line, r.data, r.code, r.changes = F.UNSUPPORTED, message, None, None, None, []
    return out


_RUN_ONLY_BY_IPYTHON = re.compile(r"^([ \t]*)([%!].*)$", re.M)


def notebook_script(data: bytes) -> str:
    """A notebook's code cells, in order, as one script that plain Python
    runs top to bottom: line magics and shell escapes (which only IPython
    runs) are commented out. How a converted notebook is run as processes."""
    cells = json.loads(data.decode("utf-8"))["cells"]
    parts = []
    for cell in cells:
        if cell.get("cell_type") != "code":
            continue
        source = cell.get("source", "")
        source = "".join(source) if isinstance(source, list) else source
        if automagic_cell(source):
            source = f"pass  # {source.strip()}"
        # ``pass`` keeps a block whose body was only a magic (``if IN_COLAB: %pip ...``) valid;
        # ``%time STMT`` runs STMT
        lines = [(timed[0] + timed[2] + timed[3] + line[len(line.rstrip("\r\n")):]) if (timed := timed_statement(line)) else line
                 for line in source.splitlines(keepends=True)]
        parts.append(_RUN_ONLY_BY_IPYTHON.sub(r"\1pass  # \2", "".join(lines)))
    return "\n\n".join(parts) + "\n"
