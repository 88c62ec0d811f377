"""``tfdist convert``: one code path for a file, stdin, several files and trees.

Modes (at most one): print to stdout (a single file or ``-``, the default),
``-o OUT`` (a file for a single file, a mirror folder for trees), ``--in-place``
(atomic replace; keeps FILE.orig unless ``--no-backup``), ``--diff``
(unified diffs on stdout, nothing written), ``--check`` (nothing written;
exit 1 when a file would change).

Trees run in two phases. Phase 1 (parent process, no syntax trees): walk
the tree, read each .py file once, test it with a bytes regex for a
TensorFlow/Keras import and summarise its imports and classes with
Python's ``ast`` (the project index). Phase 2: the files that import
TensorFlow/Keras (and notebooks that do) are converted in a process pool,
in chunks, results streamed back in order; every other file is copied
(``-o``) or left alone. One bad file never stops the rest.
"""
from __future__ import annotations

import json
import multiprocessing as mp
import os
import shutil
import sys
import time
from collections import deque
from concurrent.futures import ProcessPoolExecutor
from concurrent.futures.process import BrokenProcessPool
from typing import Dict, Iterable, Iterator, List, Optional, Tuple

from .. import __version__
from ..engine import findings as F
from ..options import Options
from . import formats
from . import index as I
from .walk import Entry, kind_of, walk
from .worker import NO_TF_NOTE, FileAnswer, FileTask, convert_one, replace_atomically, write_atomic

EXIT_OK, EXIT_CHANGES, EXIT_UNSUPPORTED, EXIT_BAD_INPUT = 0, 1, 2, 3
ORDER = (F.CONVERTED, F.UNCHANGED, F.ALREADY, F.UNSUPPORTED, F.FAILED)
LABEL = {F.CONVERTED: "converted", F.UNCHANGED: "unchanged", F.ALREADY: "already distributed",
         F.UNSUPPORTED: "unsupported", F.FAILED: "error"}


class UsageError(Exception):
    pass


# ----------------------------------------------------------------- output
class Reporter:
    """Human lines on stderr, progress when stderr is a terminal, and the tallies."""

    def __init__(self, args, tree: bool, total: int = 0):
        self.args = args
        self.tree = tree
        self.err = sys.stderr
        self.progress = tree and not args.quiet and _isatty(self.err)
        self.total = total
        self.done = 0
        self.counts: Dict[str, int] = {s: 0 for s in ORDER}
        self.attention: Dict[Tuple[str, str], List[str]] = {}
        self.entries: List[dict] = []
        self.would_change: List[str] = []
        self.copied = 0
        self.changes = 0
        self.warnings = 0
        self._shown = False
        self._last = 0.0

    def _clear(self):
        if self._shown:
            self.err.write("\r\033[K")
            self._shown = False

    def _draw(self, path: str, force=False):
        now = time.monotonic()
        if not force and now - self._last < 0.1:
            return
        self._last = now
        width = 70
        shown = path if len(path) <= width else "..." + path[-width + 3:]
        self.err.write(f"\r\033[K[{self.done}/{self.total}] {shown}")
        self.err.flush()
        self._shown = True

    def add(self, ans: FileAnswer) -> None:
        status = ans.status
        self.done += 1
        self.counts[status] = self.counts.get(status, 0) + 1
        self.entries.append(ans.entry)
        if status == F.CONVERTED:
            self.would_change.append(ans.path)
            self.changes += ans.changes
            self.warnings += ans.warnings
        if status in (F.UNSUPPORTED, F.FAILED):
            self.attention.setdefault((status, _reason(ans.error or "")), []).append(ans.path)
        lines = []
        important = status in (F.UNSUPPORTED, F.FAILED)
        if self.tree and (not self.args.quiet or important):
            lines.append(f"{ans.path}: {_status_phrase(ans)}")
        if not self.args.quiet or important:
            lines += [ln for ln in ans.lines if not self.args.quiet or ": ERROR " in ln]
        if lines:
            self._clear()
            for ln in lines:
                print(ln, file=self.err)
        if ans.diff:
            self._clear()
            sys.stdout.write(ans.diff)
            sys.stdout.flush()
        if self.progress:
            self._draw(ans.path, force=bool(lines))

    def finish(self) -> None:
        self._clear()
        self.err.flush()

    def exit_code(self, changes_fail: bool) -> int:
        """``changes_fail``: --check and --diff, which write nothing, exit 1 when
        a file would change (the convention of ``ruff format --diff``, and of
        ``gofmt -d`` / ``go fix -diff`` since Go 1.26), so CI can fail on it."""
        if self.counts.get(F.FAILED):
            return EXIT_BAD_INPUT
        if self.counts.get(F.UNSUPPORTED):
            return EXIT_UNSUPPORTED
        if changes_fail and self.counts.get(F.CONVERTED):
            return EXIT_CHANGES
        return EXIT_OK

    def summary(self) -> dict:
        attention = [{"status": s, "reason": r, "paths": p} for (s, r), p in sorted(self.attention.items())]
        return {
            "files": sum(self.counts.values()),
            "converted": self.counts[F.CONVERTED],
            "unchanged": self.counts[F.UNCHANGED],
            "already_distributed": self.counts[F.ALREADY],
            "unsupported": self.counts[F.UNSUPPORTED],
            "errors": self.counts[F.FAILED],
            "needs_attention": self.counts[F.UNSUPPORTED] + self.counts[F.FAILED],
            "copied": self.copied,
            "changes": self.changes,
            "warnings": self.warnings,
            "attention": attention,
        }

    def summary_lines(self, check: bool) -> List[str]:
        s = self.summary()
        verb = "would convert" if check else "converted"
        head = (f"tfdist: {s['files']} file{'s' if s['files'] != 1 else ''}: {verb} {s['converted']}, unchanged {s['unchanged']}, "
                f"already distributed {s['already_distributed']}, needs attention {s['needs_attention']}")
        if s["changes"] or s["warnings"]:
            head += f"; {s['changes']} changes, {s['warnings']} warnings to review"
        out = [head]
        for a in s["attention"]:
            paths = a["paths"]
            shown = ", ".join(paths[:5]) + (f" and {len(paths) - 5} more" if len(paths) > 5 else "")
            out.append(f"  {LABEL[a['status']]} ({len(paths)}): {a['reason']}: {shown}")
        if check:
            for p in self.would_change:
                out.append(f"  would convert: {p}")
        return out


def _status_phrase(ans: FileAnswer) -> str:
    s = ans.status
    if s == F.CONVERTED:
        w = f", {ans.warnings} warnings" if ans.warnings else ""
        return f"converted ({ans.pattern}, {ans.changes} changes{w})"
    if s in (F.UNSUPPORTED, F.FAILED):
        return f"{LABEL[s]}: {ans.error}"
    if ans.note:
        return f"{LABEL[s]}: {ans.note}"
    return LABEL[s]


def _reason(error: str) -> str:
    """A message without its file-specific details, to group files by reason."""
    r = error.split(": ", 1)[0] if error.startswith(("syntax error", "cannot ", "internal error")) else error
    r = r.split(" (", 1)[0].split(": line ", 1)[0]
    return r[:160] or "unknown"


def _isatty(stream) -> bool:
    try:
        return stream.isatty()
    except (AttributeError, ValueError):
        return False


# ----------------------------------------------------------------- pool
def _chunks(items: Iterable, size: int) -> Iterator[list]:
    chunk = []
    for x in items:
        chunk.append(x)
        if len(chunk) >= size:
            yield chunk
            chunk = []
    if chunk:
        yield chunk


def _run_chunk(tasks: List[FileTask]) -> List[FileAnswer]:
    return [convert_one(t) for t in tasks]


def _mp_context():
    try:
        return mp.get_context("fork")
    except ValueError:  # pragma: no cover - not on Linux
        return mp.get_context("spawn")


def _isolated(task: FileTask) -> FileAnswer:
    """One task in a fresh process: if it crashes, only it fails."""
    try:
        with ProcessPoolExecutor(1, mp_context=_mp_context()) as ex:
            return ex.submit(_run_chunk, [task]).result()[0]
    except BrokenProcessPool:
        r = F.FileResult(path=task.path, status=F.FAILED,
                         error="the parser crashed on this file (too deeply nested?); nothing written")
        return FileAnswer(path=task.path, status=F.FAILED, pattern=r.pattern, changes=0, warnings=0, error=r.error,
                          note=None, entry={**r.to_json(), "kind": task.kind}, lines=r.human_lines(),
                          diff=None, stdout=None, written=None)


def run_tasks(tasks: Iterable[FileTask], n: int, jobs: int) -> Iterator[FileAnswer]:
    """Answers in task order; a process pool when there is enough work."""
    if jobs <= 1 or n <= 1:
        for t in tasks:
            yield convert_one(t)
        return
    size = max(1, min(8, n // (jobs * 4)))
    window_max = jobs * 3
    ex = ProcessPoolExecutor(jobs, mp_context=_mp_context())
    window: deque = deque()
    chunks = _chunks(tasks, size)
    try:
        def fill():
            while len(window) < window_max:
                c = next(chunks, None)
                if c is None:
                    return
                window.append((c, ex.submit(_run_chunk, c)))

        fill()
        while window:
            chunk, fut = window.popleft()
            try:
                answers = fut.result()
            except BrokenProcessPool:
                # A worker died (a native crash): redo the chunks in flight, one file per process.
                pending = [chunk] + [c for c, _ in window]
                window.clear()
                ex.shutdown(wait=False, cancel_futures=True)
                ex = ProcessPoolExecutor(jobs, mp_context=_mp_context())
                for c in pending:
                    for t in c:
                        yield _isolated(t)
                fill()
                continue
            yield from answers
            fill()
    finally:
        ex.shutdown(wait=True, cancel_futures=True)


# ----------------------------------------------------------------- main
def run_convert(args, options: Options) -> int:
    """``tfdist convert``: ``args`` say what to convert and where the results
    go (paths, mode, report); ``options`` how (the engine and its options)."""
    try:
        return _run(args, options)
    except UsageError as e:
        print(f"tfdist: {e}", file=sys.stderr)
        return EXIT_BAD_INPUT
    except KeyboardInterrupt:
        print("\ntfdist: interrupted (every file written so far is complete: writes are atomic)", file=sys.stderr)
        return 130
    except BrokenPipeError:  # e.g. tfdist convert DIR --diff | head
        try:
            sys.stdout = open(os.devnull, "w")
        except OSError:
            pass
        return EXIT_OK


def _mode(args) -> str:
    modes = [m for m, on in (("in-place", args.in_place), ("diff", args.diff), ("check", args.check)) if on]
    if args.output:
        modes.append("output")
    if len(modes) > 1:
        raise UsageError(f"choose one of -o, --in-place, --diff, --check (got {', '.join(modes)})")
    return modes[0] if modes else "stdout"


def _run(args, options: Options) -> int:
    mode = _mode(args)
    if getattr(args, "format", "text") != "text" and mode in ("stdout", "diff"):
        raise UsageError(f"--format {args.format} writes the findings on stdout: use it with --check, -o or "
                         "--in-place (the converted code or the diff would share stdout)")
    paths = list(args.paths)
    if "-" in paths:
        if len(paths) > 1:
            raise UsageError("'-' (stdin) cannot be combined with other paths")
        if mode == "in-place":
            raise UsageError("--in-place needs files, not stdin")
        return _single(args, options, mode, "-", stdin=True)
    if len(paths) == 1 and not os.path.isdir(paths[0]):
        return _single(args, options, mode, paths[0])
    if mode == "stdout":
        what = "a directory" if len(paths) == 1 else "several paths"
        raise UsageError(f"{what}: say what to do with the converted files: -o OUTDIR (a converted copy), "
                         "--in-place, --diff or --check")
    return _tree(args, options, mode, paths)


def _mode_fields(args, options: Options, mode: str) -> dict:
    """The FileTask fields every file of a run shares: the options and what the mode asks."""
    return {"options": options, "diff": mode == "diff", "inplace": mode == "in-place", "backup": not args.no_backup}


def _single(args, options: Options, mode: str, path: str, stdin: bool = False) -> int:
    fields = _mode_fields(args, options, mode)
    kind = "ipynb" if path.endswith(".ipynb") else "py"
    if stdin:
        data = sys.stdin.buffer.read()
        fields.update(path="<stdin>", abspath=None, data=data, kind="py", project=None)
        if data.lstrip()[:1] == b"{" and b'"cells"' in data:
            fields["kind"] = "ipynb"
    else:
        project = None
        if os.path.isfile(path):
            try:
                project = I.project_context_for_file(path)
            except Exception:  # a broken sibling never stops this file
                project = None
        fields.update(path=path, abspath=os.path.abspath(path), kind=kind, project=project,
                      symlink=os.path.islink(path))
    if mode == "output":
        out = args.output
        if os.path.isdir(out) and not stdin:
            out = os.path.join(out, os.path.basename(path))
        if not stdin and os.path.exists(out) and os.path.samefile(out, path):
            raise UsageError(f"-o {args.output} is the input file itself; use --in-place")
        fields["output"] = out
    task = FileTask(**fields, stdout=mode == "stdout")
    rep = Reporter(args, tree=False, total=1)
    ans = None
    if mode == "check":
        # CI / pre-commit: like a tree, a file that imports neither TensorFlow nor
        # Keras (an empty __init__.py, other code) is fine and not even parsed.
        data = task.data
        if data is None and os.path.isfile(path):
            try:
                with open(path, "rb") as f:
                    data = f.read()
            except OSError:
                data = None
        if data is not None and not I.uses_tf(data):
            e = Entry(path=task.path, rel=os.path.basename(path), root="", kind=task.kind)
            ans = _plain(e, F.UNCHANGED, note=NO_TF_NOTE)
    if ans is None:
        ans = convert_one(task)
    rep.add(ans)
    if ans.stdout is not None:
        sys.stdout.buffer.write(ans.stdout)
        sys.stdout.flush()
    rep.finish()
    pattern = f" (pattern: {ans.pattern})" if ans.status != F.FAILED else ""
    print(rep.summary_lines(mode == "check")[0] + pattern, file=sys.stderr)
    code = rep.exit_code(mode in ("check", "diff"))
    _write_report(args, rep, mode, code)
    return code


def _report_document(args, rep: Reporter, mode: str, code: int) -> str:
    """``backend``: the one asked for (``auto``: each file's entry says which it got, and why)."""
    summary = rep.summary()
    summary.update(mode=mode, exit_code=code)
    return json.dumps({"backend": args.backend, "files": rep.entries, "summary": summary}, indent=2) + "\n"


def _write_report(args, rep: Reporter, mode: str, code: int) -> None:
    _print_format(args, rep, mode, code)
    if not args.report:
        return
    data = _report_document(args, rep, mode, code)
    try:
        write_atomic(args.report, data.encode("utf-8"))
    except OSError as e:
        raise UsageError(f"cannot write the report {args.report}: {e.strerror or e}") from None


def _print_format(args, rep: Reporter, mode: str, code: int) -> None:
    """--format json/github/sarif: the findings on stdout, for CI tools."""
    fmt = getattr(args, "format", "text")
    if fmt == "text":
        return
    if fmt == "json":
        text = _report_document(args, rep, mode, code)
    elif fmt == "github":
        text = formats.github(rep.entries)
    else:
        text = formats.sarif(rep.entries, __version__)
    sys.stdout.write(text)
    sys.stdout.flush()


def _roots(args, mode: str, paths: List[str]) -> Tuple[List[Tuple[str, str]], Optional[str], Dict[str, str]]:
    """The inputs as (display, absolute) pairs, the output folder (-o), and
    where each input goes under it; UsageError when they do not fit."""
    roots: List[Tuple[str, str]] = []  # (display, absolute)
    for p in paths:
        if not os.path.lexists(p):
            raise UsageError(f"{p}: no such file or directory")
        if os.path.abspath(p) not in [ab for _, ab in roots]:  # a path given twice is done once
            roots.append((p, os.path.abspath(p)))
    outdir = os.path.abspath(args.output) if mode == "output" else None
    if outdir:
        for disp, ab in roots:
            if os.path.isdir(ab) and os.path.exists(outdir) and os.path.samefile(outdir, ab):
                raise UsageError(f"-o {args.output} is the input folder itself; use --in-place")
            if os.path.isfile(ab) and os.path.isfile(outdir):
                raise UsageError(f"-o {args.output} is a file; several inputs need an output folder")
    # Where each input goes under OUT: a single folder is mirrored at OUT itself.
    dest: Dict[str, str] = {}
    if outdir:
        if len(roots) == 1 and os.path.isdir(roots[0][1]):
            dest[roots[0][1]] = outdir
        else:
            seen: Dict[str, str] = {}
            for disp, ab in roots:
                name = os.path.basename(ab.rstrip(os.sep)) or "root"
                if name in seen and seen[name] != ab:
                    raise UsageError(f"two inputs named {name!r} would land in the same place under {args.output}")
                seen[name] = ab
                dest[ab] = os.path.join(outdir, name)
    return roots, outdir, dest


class _Walked:
    """Phase 1 of a tree: its files in walk order, where each goes (-o), which
    need the converter, and the project index. Paths only are kept, not contents."""

    def __init__(self, roots: List[Tuple[str, str]], outdir: Optional[str], dest: Dict[str, str]):
        self.outdir = outdir
        self.entries: List[Entry] = []
        self.outs: List[Optional[str]] = []
        for disp, ab in roots:
            if os.path.isdir(ab):
                for e in walk(ab, disp, exclude=[outdir] if outdir else []):
                    self.entries.append(e)
                    self.outs.append(os.path.join(dest[ab], *e.rel.split("/")) if outdir else None)
            else:
                self.entries.append(Entry(path=disp, rel=os.path.basename(ab), root=os.path.dirname(ab),
                                          kind=kind_of(ab), symlink=os.path.islink(disp),
                                          broken=not os.path.exists(ab)))
                self.outs.append(dest[ab] if outdir else None)
        self.summaries: Dict[str, I.ModuleSummary] = {}
        self.needs: Dict[int, bool] = {i: self._needs(e) for i, e in enumerate(self.entries)}
        index_roots = [ab if os.path.isdir(ab) else os.path.dirname(ab) for _, ab in roots]
        self.index = I.ProjectIndex(index_roots, self.summaries, lazy=True)
        self.real_files = {os.path.realpath(e.abspath): e.path for e in self.entries if not e.symlink}

    def _needs(self, e: Entry) -> bool:
        """The file goes to the converter (a .py or notebook that imports
        TensorFlow/Keras, or one the worker must report on); summarises .py files."""
        if e.kind == "other" or e.broken:
            return e.kind != "other"
        try:
            with open(e.abspath, "rb") as f:
                data = f.read()
        except OSError:
            return True  # the worker reports the error
        if e.kind == "py":
            self.summaries[os.path.abspath(e.abspath)] = I.summarize(os.path.abspath(e.abspath), data)
        return I.uses_tf(data)

    def project_for(self, e: Entry):
        """The cross-module facts of a file's neighbours, or None."""
        ab = os.path.abspath(e.abspath)
        try:
            if e.kind == "py" and ab in self.summaries:
                return self.index.context_for(ab, self.summaries[ab])
            if e.kind == "ipynb" and not e.broken:
                return self.index.context_for(ab, I.notebook_summary(ab))
        except Exception:  # a broken module never stops this file
            return None
        return None

    def tasks(self, shared: dict) -> Iterator[FileTask]:
        for i, e in enumerate(self.entries):
            if not self.needs.get(i):
                continue
            yield FileTask(**shared, path=e.path, abspath=e.abspath, kind=e.kind, project=self.project_for(e),
                           tree=True, symlink=e.symlink, broken=e.broken, mirror=True,
                           link_in_tree=_target_in_tree(e, self.real_files) if e.symlink and not e.broken else None,
                           output=self.outs[i] if self.outdir else None)


def _tree(args, options: Options, mode: str, paths: List[str]) -> int:
    walked = _Walked(*_roots(args, mode, paths))
    rep = Reporter(args, tree=True, total=sum(1 for e in walked.entries if e.kind != "other"))
    n_tasks = sum(1 for v in walked.needs.values() if v)
    jobs = args.jobs or os.cpu_count() or 1
    answers = run_tasks(walked.tasks(_mode_fields(args, options, mode)), n_tasks, jobs)
    try:
        _stream(walked, answers, rep)
    finally:
        answers.close()
        rep.finish()
    check = mode == "check"
    for line in rep.summary_lines(check):
        print(line, file=sys.stderr)
    code = rep.exit_code(mode in ("check", "diff"))
    _write_report(args, rep, mode, code)
    return code


def _stream(walked: _Walked, answers: Iterator[FileAnswer], rep: Reporter) -> None:
    """Interleave copied / skipped files with the answers, in walk order."""
    for i, e in enumerate(walked.entries):
        if walked.needs.get(i):
            rep.add(next(answers))
            continue
        if walked.outdir:
            try:
                _copy(e.abspath, walked.outs[i])
                rep.copied += 1
            except OSError as err:
                if e.kind != "other":
                    rep.add(_plain(e, F.FAILED, error=f"cannot copy: {err.strerror or err}"))
                else:
                    print(f"{e.path}: ERROR error: cannot copy: {err.strerror or err}", file=sys.stderr)
                    rep.counts[F.FAILED] += 1
                    rep.attention.setdefault((F.FAILED, "cannot copy"), []).append(e.path)
                continue
        if e.kind != "other":
            rep.add(_plain(e, F.UNCHANGED, note=NO_TF_NOTE))


def _plain(e: Entry, status: str, note: Optional[str] = None, error: Optional[str] = None) -> FileAnswer:
    """The answer for a file that is not converted (no TensorFlow import, a failed copy)."""
    entry = {"path": e.path, "status": status, "pattern": "Unknown", "changes": [], "warnings": [],
             "error": error, "error_line": None, "evidence": [], "hierarchy": [], "kind": e.kind, "written": None}
    if note:
        entry["note"] = note
    return FileAnswer(path=e.path, status=status, pattern="Unknown", changes=0, warnings=0, error=error, note=note,
                      entry=entry, lines=[], diff=None, stdout=None, written=None)


def _target_in_tree(e: Entry, real_files: Dict[str, str]) -> Optional[str]:
    """The tree path a file link resolves to, when that file is converted in the same run."""
    return real_files.get(os.path.realpath(e.abspath))


def _copy(src: str, dst: str) -> None:
    """Byte-identical copy (mode bits too), streamed, via a temporary file."""
    replace_atomically(dst, lambda tmp: shutil.copyfile(src, tmp), mode_from=src)
