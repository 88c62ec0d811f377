"""Byte-for-byte snapshots of conversions, to show a change of tfdist's code
changes no conversion (prints figures; not a test).

``snapshot`` converts every tree given with ``tfdist convert TREE -o OUT
--report R.json`` once per engine and option combination, and writes one
JSON manifest: for every (combination, file) the SHA-256 of the bytes
written, the file's status, and its report entry (changes, warnings,
errors, with the tree's path taken out).  ``compare`` reads two manifests
and prints how many file x combination pairs were compared and every one
that differs (exit 1 if any does)::

    PYTHONPATH=/frozen/copy/of/src python3 benchmarks/conversion_snapshot.py snapshot \\
        TREE... --out before.json
    PYTHONPATH=src python3 benchmarks/conversion_snapshot.py snapshot TREE... --out after.json
    python3 benchmarks/conversion_snapshot.py compare before.json after.json
        [--common] [--ignore-field FIELD]...

``PYTHONPATH`` decides which tfdist is measured (the conversions run as
``python -m tfdist`` subprocesses with that path).  Only LibCST is needed.
"""
from __future__ import annotations

import argparse
import hashlib
import json
import os
import subprocess
import sys
import tempfile
import time
from typing import Dict, List, Tuple

#: Every option combination the comparison covers, by engine.
COMBINATIONS: List[Tuple[str, List[str]]] = [
    ("horovod", []),
    ("horovod", ["--lr-scaling", "sqrt"]),
    ("horovod", ["--lr-scaling", "none"]),
    ("horovod", ["--warmup-epochs", "2"]),
    ("horovod", ["--warmup-epochs", "2", "--steps-per-epoch", "50"]),
    ("tf-distribute", []),
    ("tf-distribute", ["--lr-scaling", "sqrt"]),
    ("tf-distribute", ["--lr-scaling", "none"]),
    ("tf-distribute", ["--fault-tolerant"]),
    ("tf-distribute", ["--fault-tolerant", "--lr-scaling", "sqrt"]),
    ("tf-distribute", ["--warmup-epochs", "2"]),
    ("tf-distribute", ["--warmup-epochs", "2", "--steps-per-epoch", "50"]),
]


def _digest(path: str) -> str:
    with open(path, "rb") as f:
        return hashlib.sha256(f.read()).hexdigest()


def _strip(value, prefixes):
    """The report entry with the tree's and the output's paths taken out."""
    if isinstance(value, str):
        for prefix in prefixes:
            value = value.replace(prefix, "<TREE>")
        return value
    if isinstance(value, list):
        return [_strip(v, prefixes) for v in value]
    if isinstance(value, dict):
        return {k: _strip(v, prefixes) for k, v in value.items()}
    return value


def snapshot_tree(tree: str, backend: str, options: List[str], jobs: int) -> Dict[str, dict]:
    tree = os.path.abspath(tree)
    with tempfile.TemporaryDirectory() as tmp:
        out, report = os.path.join(tmp, "out"), os.path.join(tmp, "report.json")
        cmd = [sys.executable, "-m", "tfdist", "convert", tree, "-o", out, "--report", report, "-q",
               "--backend", backend, "-j", str(jobs), *options]
        proc = subprocess.run(cmd, capture_output=True, text=True)
        if not os.path.exists(report):
            raise SystemExit(f"{' '.join(cmd)}: exit {proc.returncode}, no report\n{proc.stderr[-2000:]}")
        with open(report, encoding="utf-8") as f:
            files = json.load(f)["files"]
        entries = {}
        for entry in files:
            rel = os.path.relpath(entry["path"], tree)
            written = os.path.join(out, rel)
            entry = _strip(entry, [tree + os.sep, out + os.sep, tree, out])
            entry["written"] = _digest(written) if os.path.isfile(written) else None
            entries[rel] = entry
        return entries


def cmd_snapshot(args) -> int:
    manifest: Dict[str, dict] = {}
    start = time.time()
    chosen = [COMBINATIONS[i] for i in args.combination] if args.combination else COMBINATIONS
    for backend, options in chosen:
        combo = " ".join([backend, *options])
        for tree in args.trees:
            name = os.path.basename(os.path.normpath(tree))
            for rel, entry in snapshot_tree(tree, backend, options, args.jobs).items():
                manifest[f"{combo} :: {name}/{rel}"] = entry
        print(f"{combo}: {sum(1 for k in manifest if k.startswith(combo + ' ::'))} files "
              f"({time.time() - start:.0f} s)", file=sys.stderr)
    with open(args.out, "w", encoding="utf-8") as f:
        json.dump(manifest, f, indent=0, sort_keys=True)
    print(f"{len(manifest)} file x combination pairs written to {args.out}")
    return 0


def cmd_compare(args) -> int:
    with open(args.before, encoding="utf-8") as f:
        before = json.load(f)
    with open(args.after, encoding="utf-8") as f:
        after = json.load(f)
    for manifest in (before, after):  # report fields one side adds (a report's new field is no conversion change)
        for entry in manifest.values():
            for field in args.ignore_field:
                entry.pop(field, None)
    keys = sorted(set(before) & set(after)) if args.common else sorted(set(before) | set(after))
    if args.common:
        print(f"{len(set(before) ^ set(after))} pairs in one manifest only (left out: --common)")
    differ = [k for k in keys if before.get(k) != after.get(k)]
    converted = sum(1 for k in keys if (before.get(k) or {}).get("status") == "converted")
    for key in differ[:args.show]:
        b, a = before.get(key) or {}, after.get(key) or {}
        fields = sorted(f for f in set(a) | set(b) if a.get(f) != b.get(f))
        print(f"DIFFERS {key}: {', '.join(fields)}")
    print(f"{len(keys)} file x combination pairs compared ({converted} converted before); "
          f"{len(differ)} differ")
    return 1 if differ else 0


def main(argv=None) -> int:
    p = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    sub = p.add_subparsers(dest="command", required=True)
    s = sub.add_parser("snapshot")
    s.add_argument("trees", nargs="+")
    s.add_argument("--out", required=True)
    s.add_argument("--jobs", type=int, default=0)
    s.add_argument("--combination", type=int, action="append", default=[], metavar="I",
                   help="only COMBINATIONS[I] (repeatable; default: all %d)" % len(COMBINATIONS))
    c = sub.add_parser("compare")
    c.add_argument("before")
    c.add_argument("after")
    c.add_argument("--show", type=int, default=40)
    c.add_argument("--common", action="store_true", help="compare only the pairs both manifests hold")
    c.add_argument("--ignore-field", action="append", default=[], metavar="FIELD",
                   help="a report field to leave out (one the newer report adds, e.g. backend_reason)")
    args = p.parse_args(argv)
    return cmd_snapshot(args) if args.command == "snapshot" else cmd_compare(args)


if __name__ == "__main__":
    sys.exit(main())
