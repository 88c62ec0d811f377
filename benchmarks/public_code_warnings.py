"""How much hand work tfdist leaves on real code (prints figures; not a test).

Converts every ``.py`` file and ``.ipynb`` notebook under the given trees
in-process with tfdist's own tree machinery -- the same walk, the same
TensorFlow-import test, the same cross-module project index
(:class:`tfdist.project.index.ProjectIndex`, so ``from nets import Net``
resolves across a repository) and the same per-file worker
(:func:`tfdist.project.worker.convert_one`) as ``tfdist convert TREE`` --
writes nothing, and prints:

* files seen, TensorFlow files, converted, refused (grouped by reason),
  unchanged / helper modules / already distributed, errors;
* the share of converted files that still carry at least one WARNING-level
  finding (a "hand-work warning": tfdist converted the file but asks a
  human to finish something), overall, per tree (repository) and per
  training pattern;
* every warning grouped by (rule, message template): code quoted in the
  message and numbers are normalised, so the same message about different
  variables falls into one group; each group has a count, the number of
  files, and an example ``path:line`` (``--examples K`` lists K).

Rerun it on any trees (one argument per repository gives per-repository
figures)::

    PYTHONPATH=src python3 benchmarks/public_code_warnings.py /path/to/repoA /path/to/repoB \\
        [--json OUT.json] [--examples 3] [--jobs 1] [--top 40]

``PYTHONPATH`` picks which tfdist is measured (a frozen copy of ``src``
gives "before" figures); without it, this checkout's ``src`` is used. Only
LibCST is needed: converting never imports TensorFlow. ``--jobs N`` uses
tfdist's process pool instead of converting in this process.
"""
from __future__ import annotations

import argparse
import json
import os
import re
import sys
import time
import warnings
from collections import Counter, defaultdict
from typing import Dict, Iterator, List, Optional, Tuple

try:
    import tfdist  # noqa: F401  (PYTHONPATH decides which source is measured)
except ImportError:
    sys.path.insert(0, os.path.join(os.path.dirname(os.path.dirname(os.path.abspath(__file__))), "src"))
    import tfdist  # noqa: F401

from tfdist.engine import findings as F
from tfdist.options import Options
from tfdist.project import index as I
from tfdist.project.runner import run_tasks
from tfdist.project.walk import walk
from tfdist.project.worker import HELPER_NOTE, NO_TF_NOTE, FileAnswer, FileTask, convert_one

HELPER = "helper"  # a TensorFlow module without a training loop, reported unchanged in a tree
# A textual hint only (this benchmark's own heuristic, not tfdist's analysis): a
# "helper" module that calls one of these may be a training script tfdist missed.
TRAINING_CALL = re.compile(rb"\.(fit|fit_generator|train_on_batch|minimize|apply_gradients)\s*\(")


# ------------------------------------------------------------ normalising
# Code-like tokens in a message: dotted names, calls, subscripts, snake_case,
# CamelCase and numbers. Their exact text differs from file to file.
_BALANCED = r"(?:\((?:[^()]|\((?:[^()]|\([^()]*\))*\))*\)|\[(?:[^\[\]]|\[[^\[\]]*\])*\])"
_CODE = re.compile(
    r"`[^`]*`"
    r"|(?<!\w)'[^'\n]*'|(?<!\w)\"[^\"\n]*\""
    r"|\.?[A-Za-z_]\w*(?:\.[A-Za-z_]\w*|" + _BALANCED + r")+"
    r"|\b\d+(?:\.\d+)?(?:e-?\d+)?\b"
    r"|\b[A-Za-z]*_\w*\b"
    r"|\b[a-z]+[A-Z]\w*\b|\b[A-Z]\w*[a-z][A-Z]\w*\b"
)
_TOKEN = re.compile(r"\s+")


def mask(message: str) -> List[str]:
    """The message as tokens, code-like parts replaced by one placeholder each."""
    masked = _CODE.sub(" \0 ", message)
    return [t for t in _TOKEN.split(masked) if t]


def _tokens(message: str) -> List[Tuple[str, int, int]]:
    """The message as (token, start, end), code-like parts kept whole (aligned with mask())."""
    out, pos = [], 0

    def words(lo: int, hi: int) -> None:
        for w in re.finditer(r"\S+", message[lo:hi]):
            out.append((w.group(0), lo + w.start(), lo + w.end()))

    for m in _CODE.finditer(message):
        words(pos, m.start())
        out.append((m.group(0), m.start(), m.end()))
        pos = m.end()
    words(pos, len(message))
    return out


def template(messages: List[str]) -> str:
    """One readable template for messages of a group: what differs becomes <...>."""
    toks = [_tokens(m) for m in messages]
    n = len(toks[0])
    if any(len(t) != n for t in toks):  # merged groups of slightly different shape: the first, masked
        return _CODE.sub("<...>", messages[0])
    first, out, pos = messages[0], [], 0
    for i in range(n):
        if len({t[i][0] for t in toks}) > 1:
            _, lo, hi = toks[0][i]
            out += [first[pos:lo], "<...>"]
            pos = hi
    out.append(first[pos:])
    return "".join(out)


def _word_or_code(token: str) -> bool:
    return token == "\0" or re.fullmatch(r"[A-Za-z]\w*", token) is not None


def group_keys(messages_by_rule: Dict[str, List[str]]) -> Dict[Tuple[str, str], Tuple[str, ...]]:
    """(rule, message) -> group key. Masked token tuples, then masks that
    differ in one or two single plain words (a bare variable name quoted in
    the message) are merged into one group."""
    keys: Dict[Tuple[str, str], Tuple[str, ...]] = {}
    for rule, msgs in messages_by_rule.items():
        masked = {m: tuple(mask(m)) for m in set(msgs)}
        counts = Counter(masked[m] for m in msgs)
        canon: Dict[Tuple[str, ...], Tuple[str, ...]] = {}
        for k, _ in counts.most_common():
            for c in list(set(canon.values())):
                if len(c) == len(k) and len(k) >= 6:
                    diff = [i for i in range(len(k)) if c[i] != k[i]]
                    if len(diff) <= 2 and all(_word_or_code(c[i]) and _word_or_code(k[i]) for i in diff):
                        canon[k] = c
                        break
            else:
                canon[k] = k
        for m in msgs:
            keys[(rule, m)] = canon[masked[m]]
    return keys


# ------------------------------------------------------------ converting
def _tasks(roots: List[Tuple[str, str]], backend: str = "horovod") -> Tuple[List[Tuple[str, FileTask]], Dict[str, int], List[dict]]:
    """Phase 1 of a tree conversion (walk, TF test, project index), for all roots.

    The tasks come with the root (repository) each file belongs to."""
    seen: Dict[str, int] = Counter()
    skipped: List[dict] = []
    pending = []  # (root display, entry)
    summaries: Dict[str, I.ModuleSummary] = {}
    for disp, ab in roots:
        for e in walk(ab, disp):
            if e.kind == "other":
                continue
            seen[disp] += 1
            if e.broken:
                pending.append((disp, e))
                continue
            try:
                with open(e.abspath, "rb") as f:
                    data = f.read()
            except OSError:
                pending.append((disp, e))
                continue
            if not I.uses_tf(data):
                skipped.append({"repo": disp, "path": e.path, "kind": e.kind, "status": F.UNCHANGED, "tf": False,
                                "note": NO_TF_NOTE, "warnings": [], "changes": [], "error": None})
                continue
            if e.kind == "py":
                summaries[os.path.abspath(e.abspath)] = I.summarize(os.path.abspath(e.abspath), data)
            pending.append((disp, e))
    index = I.ProjectIndex([ab for _, ab in roots], summaries, lazy=True)
    tasks = []
    for disp, e in pending:
        ab = os.path.abspath(e.abspath)
        project = None
        try:
            if e.kind == "py" and ab in summaries:
                project = index.context_for(ab, summaries[ab])
            elif e.kind == "ipynb" and not e.broken:
                project = index.context_for(ab, I.notebook_summary(ab))
        except Exception:  # as the CLI does: a broken module never stops this file
            project = None
        tasks.append((disp, FileTask(options=Options(backend=backend), diff=False, inplace=False, backup=False, path=e.path,
                                     abspath=e.abspath, kind=e.kind, project=project, tree=True,
                                     symlink=e.symlink, broken=e.broken, mirror=False)))
    return tasks, dict(seen), skipped


def convert_all(roots: List[Tuple[str, str]], jobs: int, backend: str = "horovod") -> Tuple[List[dict], Dict[str, int], float]:
    t0 = time.perf_counter()
    tasks, seen, files = _tasks(roots, backend)
    if jobs <= 1:
        def answers() -> Iterator[Tuple[FileAnswer, float]]:
            for _, t in tasks:
                s = time.perf_counter()
                a = convert_one(t)
                yield a, time.perf_counter() - s
        stream = answers()
    else:
        stream = ((a, None) for a in run_tasks((t for _, t in tasks), len(tasks), jobs))
    for (repo, t), (ans, secs) in zip(tasks, stream):
        entry = ans.entry
        status = ans.status
        if status == F.UNCHANGED and ans.note == HELPER_NOTE:
            status = HELPER
        warnings = []
        for w in entry.get("warnings", []):
            if w.get("level") != F.WARNING:
                continue
            warnings.append({"rule": w["rule"], "message": w["message"], "line": w["line"], "col": w["col"],
                             "cell": w.get("cell")})
        hints = []
        if status == HELPER:
            try:
                with open(t.abspath, "rb") as fh:
                    hints = sorted({m.group(1).decode() for m in TRAINING_CALL.finditer(fh.read())})
            except OSError:
                pass
        files.append({"repo": repo, "path": ans.path, "kind": t.kind, "status": status, "tf": True,
                      "training_calls": hints,
                      "pattern": ans.pattern, "evidence": sorted({e["pattern"] for e in entry.get("evidence", [])}),
                      "changes": [{"rule": c["rule"], "line": c["line"], "message": c["message"], "cell": c.get("cell")}
                                  for c in entry.get("changes", [])],
                      "warnings": warnings, "error": ans.error,
                      "error_line": entry.get("error_line"), "error_cell": entry.get("error_cell"),
                      "seconds": None if secs is None else round(secs, 4)})
    return files, seen, time.perf_counter() - t0


# ------------------------------------------------------------ reporting
def where(path: str, line, cell=None) -> str:
    return f"{path} [cell {cell}]:{line}" if cell else f"{path}:{line}"


def pct(a: int, b: int) -> str:
    return f"{100.0 * a / b:.0f}%" if b else "-"


def report(files: List[dict], seen: Dict[str, int], seconds: float, examples: int, top: int) -> Tuple[List[str], dict]:
    out: List[str] = []
    repos = list(seen)
    conv = [f for f in files if f["status"] == F.CONVERTED]
    hand = [f for f in conv if f["warnings"]]
    st = Counter(f["status"] for f in files)
    total_w = sum(len(f["warnings"]) for f in conv)
    out.append(f"tfdist measured: {os.path.dirname(os.path.abspath(tfdist.__file__))}")
    out.append(f"files seen (.py + .ipynb): {sum(seen.values())}  "
               f"(.py {sum(1 for f in files if f['kind'] == 'py')}, .ipynb {sum(1 for f in files if f['kind'] == 'ipynb')})")
    out.append(f"TensorFlow files: {sum(1 for f in files if f['tf'])}   "
               f"(not importing TensorFlow/Keras, not parsed: {sum(1 for f in files if not f['tf'])})")
    out.append(f"converted: {st[F.CONVERTED]}   refused (unsupported): {st[F.UNSUPPORTED]}   errors (bad input): {st[F.FAILED]}   "
               f"helper modules (no training loop): {st[HELPER]}   unchanged: {sum(1 for f in files if f['tf'] and f['status'] == F.UNCHANGED)}   "
               f"already distributed: {st[F.ALREADY]}")
    out.append(f"converted files with >= 1 hand-work warning: {len(hand)}/{len(conv)} = {pct(len(hand), len(conv))}   "
               f"total warnings: {total_w}")
    out.append(f"runtime: {seconds:.1f} s")
    out.append("")
    out.append("per repository:")
    out.append(f"  {'repository':45} {'seen':>5} {'tf':>4} {'conv':>5} {'refused':>7} {'err':>4} {'help':>5} {'hand':>5} {'share':>6} {'warn':>5}")
    for r in repos:
        fs = [f for f in files if f["repo"] == r]
        c = [f for f in fs if f["status"] == F.CONVERTED]
        h = [f for f in c if f["warnings"]]
        out.append(f"  {r[-45:]:45} {seen[r]:5} {sum(1 for f in fs if f['tf']):4} {len(c):5} "
                   f"{sum(1 for f in fs if f['status'] == F.UNSUPPORTED):7} {sum(1 for f in fs if f['status'] == F.FAILED):4} "
                   f"{sum(1 for f in fs if f['status'] == HELPER):5} {len(h):5} {pct(len(h), len(c)):>6} "
                   f"{sum(len(f['warnings']) for f in c):5}")
    out.append("")
    out.append("per training pattern (converted files):")
    by_pat: Dict[str, List[dict]] = defaultdict(list)
    for f in conv:
        by_pat["+".join(f["evidence"]) or f["pattern"]].append(f)
    for p, fs in sorted(by_pat.items(), key=lambda kv: -len(kv[1])):
        h = [f for f in fs if f["warnings"]]
        rules = Counter(w["rule"] for f in fs for w in f["warnings"])
        out.append(f"  {p:28} converted {len(fs):4}  with warnings {len(h):4} ({pct(len(h), len(fs)):>4})  "
                   f"warnings {sum(rules.values()):4}: " + ", ".join(f"{k} {v}" for k, v in rules.most_common()))
    out.append("")

    # warning groups
    by_rule: Dict[str, List[str]] = defaultdict(list)
    for f in conv:
        for w in f["warnings"]:
            by_rule[w["rule"]].append(w["message"])
    keys = group_keys(by_rule)
    groups: Dict[Tuple[str, Tuple[str, ...]], List[Tuple[dict, dict]]] = defaultdict(list)
    for f in conv:
        for w in f["warnings"]:
            groups[(w["rule"], keys[(w["rule"], w["message"])])].append((f, w))
    ordered = sorted(groups.items(), key=lambda kv: (-len(kv[1]), kv[0][0]))
    group_data = []
    for (rule, _), items in ordered:
        nfiles = len({f["path"] for f, _ in items})
        pats = Counter("+".join(f["evidence"]) or f["pattern"] for f, _ in items)
        group_data.append({"rule": rule, "template": template([w["message"] for _, w in items]), "count": len(items),
                           "files": nfiles, "patterns": dict(pats),
                           "examples": [{"where": where(f["path"], w["line"], w["cell"]), "message": w["message"]}
                                        for f, w in _spread(items, max(examples, 1))]})
    out.append(f"warnings by (rule, message template): {len(group_data)} groups")
    for i, g in enumerate(group_data[:top] if top else group_data, 1):
        pats = ", ".join(f"{k} {v}" for k, v in sorted(g["patterns"].items(), key=lambda kv: -kv[1]))
        out.append(f"{i:3}. [{g['count']} in {g['files']} files] {g['rule']}: {g['template']}")
        out.append(f"       patterns: {pats}")
        for ex in g["examples"][:max(examples, 1)]:
            out.append(f"       e.g. {ex['where']}")
    if top and len(group_data) > top:
        rest = group_data[top:]
        out.append(f"  ... and {len(rest)} more groups ({sum(g['count'] for g in rest)} warnings)")
    out.append("")

    # refusals and errors: grouped like the warnings (status as the rule)
    bad = [f for f in files if f["status"] in (F.UNSUPPORTED, F.FAILED)]
    by_status: Dict[str, List[str]] = defaultdict(list)
    for f in bad:
        by_status[f["status"]].append(f["error"] or "")
    rkeys = group_keys(by_status)
    refused: Dict[Tuple[str, Tuple[str, ...]], List[dict]] = defaultdict(list)
    for f in bad:
        refused[(f["status"], rkeys[(f["status"], f["error"] or "")])].append(f)
    out.append(f"refused / errors by reason: {len(bad)} files")
    refusal_data = []
    for (status, _), fs in sorted(refused.items(), key=lambda kv: (-len(kv[1]), kv[0][0])):
        reason = template([f["error"] or "" for f in fs])
        exs = [where(f["path"], f["error_line"] or "", f.get("error_cell")) for f, _ in
               _spread([(f, None) for f in fs], max(examples, 1))]
        refusal_data.append({"status": status, "reason": reason, "count": len(fs), "examples": exs,
                             "repos": dict(Counter(f["repo"] for f in fs))})
        out.append(f"  [{len(fs)}] {status}: {reason}")
        for ex in exs:
            out.append(f"       e.g. {ex}")
    # possible silent misses
    missed = [f for f in files if f["status"] == HELPER and f.get("training_calls")]
    out.append("")
    out.append(f"helper modules (reported 'no training loop', left unchanged) that call .fit/.minimize/"
               f".apply_gradients/.train_on_batch (textual hint of a missed training script): {len(missed)} of {st[HELPER]}")
    by_calls: Dict[str, List[dict]] = defaultdict(list)
    for f in missed:
        by_calls["+".join(f["training_calls"])].append(f)
    for k, fs in sorted(by_calls.items(), key=lambda kv: -len(kv[1])):
        out.append(f"  [{len(fs)}] {k}: " + ", ".join(f["path"] for f in fs[:max(examples, 1)]))
    timed = [f for f in files if f.get("seconds")]
    if timed:
        out.append("")
        out.append("slowest files: " + ", ".join(f"{f['path']} {f['seconds']:.2f}s"
                                                 for f in sorted(timed, key=lambda f: -f["seconds"])[:5]))
    summary = {
        "tfdist": os.path.dirname(os.path.abspath(tfdist.__file__)),
        "files_seen": sum(seen.values()), "tf_files": sum(1 for f in files if f["tf"]),
        "converted": len(conv), "with_warnings": len(hand),
        "share_with_warnings": round(len(hand) / len(conv), 4) if conv else None,
        "warnings": total_w, "statuses": dict(st), "seconds": round(seconds, 2),
        "per_repo": {r: {"seen": seen[r], "converted": sum(1 for f in conv if f["repo"] == r),
                         "with_warnings": sum(1 for f in hand if f["repo"] == r),
                         "warnings": sum(len(f["warnings"]) for f in conv if f["repo"] == r)} for r in repos},
        "helpers_with_training_calls": len(missed),
        "groups": group_data, "refusals": refusal_data,
    }
    return out, summary


def _spread(items: List[Tuple[dict, dict]], k: int) -> List[Tuple[dict, dict]]:
    """k examples from different files (and repositories) when there are."""
    out, files, repos = [], set(), set()
    for pass_ in (0, 1, 2):
        for f, w in items:
            if len(out) >= k:
                return out
            if any(f is a and w is b for a, b in out):
                continue
            if pass_ == 0 and (f["repo"] in repos or f["path"] in files):
                continue
            if pass_ == 1 and f["path"] in files:
                continue
            out.append((f, w))
            files.add(f["path"])
            repos.add(f["repo"])
    return out


def main(argv: Optional[List[str]] = None) -> int:
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0],
                                formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("trees", nargs="+", help="directory trees (one per repository gives per-repository figures)")
    p.add_argument("--json", metavar="OUT", help="write the summary and the full per-file data as JSON")
    p.add_argument("--examples", type=int, default=1, metavar="K", help="examples listed per group (default 1)")
    p.add_argument("--top", type=int, default=0, metavar="N", help="list only the N largest warning groups (default all)")
    p.add_argument("--backend", choices=("horovod", "tf-distribute"), default="horovod",
                   help="the engine the files are converted for (default horovod)")
    p.add_argument("--jobs", "-j", type=int, default=1, help="worker processes (default 1: in this process)")
    args = p.parse_args(argv)
    warnings.simplefilter("ignore", SyntaxWarning)  # the converted code is compiled; its own warnings are noise here
    roots = []
    for t in args.trees:
        if not os.path.isdir(t):
            p.error(f"{t}: not a directory")
        disp = t.rstrip("/")
        roots.append((disp, os.path.abspath(t)))
    files, seen, seconds = convert_all(roots, args.jobs, args.backend)
    lines, summary = report(files, seen, seconds, args.examples, args.top)
    print("\n".join(lines))
    if args.json:
        with open(args.json, "w", encoding="utf-8") as f:
            json.dump({"summary": summary, "files": files}, f, indent=1)
            f.write("\n")
    return 0


if __name__ == "__main__":
    sys.exit(main())
