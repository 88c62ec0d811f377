"""Does tfdist's conversion of public code TRAIN correctly? (prints figures; not a test)

For every ``.py`` script and ``.ipynb`` notebook under the given trees that
loads one of the ``keras.datasets`` (mnist, fashion_mnist, cifar10/100,
imdb, reuters, boston_housing, california_housing), run ``tfdist verify
--compare`` with each engine on N processes (default 2) and report, per file
and per engine:

* PASS      -- converted, and verify passed: every rank exit 0, identical
               variables, 1/N of the steps, files from one process, samples
               divided, and a final loss within --compare's tolerance;
* FAIL      -- converted, the original ran, the conversion did not pass
               (the reasons are listed);
* refused   -- tfdist refused the file (its reason is listed);
* not runnable -- the ORIGINAL does not run here (it needs other files,
               downloads, a GPU, a package this stack lacks, or it exceeds
               --timeout): nothing can be said about the conversion.

No download happens: ``keras_datasets_standin/sitecustomize.py`` (put on the
runs' PYTHONPATH) makes every ``load_data()`` return synthetic arrays of the
real per-sample shapes with learnable labels, ``TFDIST_STANDIN_TRAIN`` /
``TFDIST_STANDIN_TEST`` samples (default 2048 / 512 here, to keep runs short).

Engines run on the project's stacks (``scripts/setup_runtime.sh``): Horovod on
TensorFlow 2.15.1, tf-distribute on TensorFlow 2.21 (Keras 3). A notebook is
converted as a notebook (``tfdist convert NB.ipynb``) and its code cells --
original and converted -- run as one script each (line magics commented out).

``--tfdist-src DIR`` measures another tfdist (e.g. a ``git worktree`` of an
older commit: "before" figures); ``--held-out`` trees are reported apart.

    PYTHONPATH=src python3 benchmarks/public_code_verify.py TREE... [--held-out TREE...] \\
        [--engines horovod,tf-distribute] [-np 2] [--timeout 300] [--only REGEX] [--json OUT.json]
"""
from __future__ import annotations

import argparse
import json
import os
import re
import subprocess
import sys
import tempfile
import time
from pathlib import Path

HERE = Path(__file__).resolve().parent
ROOT = HERE.parent
sys.path.insert(0, str(ROOT / "src"))

from tfdist.project.notebook import notebook_script  # noqa: E402

STANDIN = HERE / "keras_datasets_standin"
LOADS_KERAS_DATASET = re.compile(
    rb"datasets\.(mnist|fashion_mnist|cifar10|cifar100|imdb|reuters|boston_housing|california_housing)\b"
    rb"|datasets import[^\n]*\b(mnist|fashion_mnist|cifar10|cifar100|imdb|reuters|boston_housing|california_housing)\b")
SKIP_DIRS = {".git", "node_modules", "__pycache__", ".ipynb_checkpoints"}


def candidates(tree: Path):
    for path in sorted(tree.rglob("*")):
        if path.suffix not in (".py", ".ipynb") or SKIP_DIRS & set(path.parts) or not path.is_file():
            continue
        data = path.read_bytes()
        if LOADS_KERAS_DATASET.search(data) and b"load_data(" in data:
            yield path


def stack_python(engine: str) -> str:
    out = subprocess.run(["bash", str(ROOT / "scripts" / "setup_runtime.sh"),
                          "tf-distribute" if engine == "tf-distribute" else "horovod"],
                         capture_output=True, text=True, check=True).stdout.strip().splitlines()[-1]
    return str(Path(out) / "bin" / "python")


def run_one(path: Path, engine: str, python: str, args, env) -> dict:
    started = time.time()
    with tempfile.TemporaryDirectory(prefix="tfdist-pcv-") as tmp:
        tmp = Path(tmp)
        verify = [python, "-m", "tfdist", "verify", "--backend", engine, "-np", str(args.np), "--compare",
                  "--timeout", str(args.timeout), "--json"]
        if path.suffix == ".ipynb":
            converted_nb = tmp / "converted.ipynb"
            conv = subprocess.run([python, "-m", "tfdist", "convert", "--backend", engine, str(path),
                                   "-o", str(converted_nb)], capture_output=True, text=True, env=env)
            if conv.returncode == 2 or not converted_nb.exists():
                return {"outcome": "refused", "why": _last_error(conv.stderr + conv.stdout),
                        "seconds": round(time.time() - started)}
            original = tmp / (path.stem + ".py")
            original.write_text(notebook_script(path.read_bytes()), encoding="utf-8")
            (tmp / "conv").mkdir()
            converted = tmp / "conv" / original.name
            converted.write_text(notebook_script(converted_nb.read_bytes()), encoding="utf-8")
            cmd = verify + ["--converted", "--original", str(original), str(converted)]
        else:
            cmd = verify + [str(path)]
        proc = subprocess.run(cmd, capture_output=True, text=True, env=env, cwd=tmp,
                              timeout=3 * args.timeout + 120)
    seconds = round(time.time() - started)
    try:
        report = json.loads(proc.stdout[proc.stdout.index("{"):])
    except ValueError:
        return {**classify_message(proc.stderr or proc.stdout), "seconds": seconds}
    if report.get("conversion_status") in ("unchanged", "no-tf", "helper"):
        return {"outcome": "no training", "why": report.get("conversion_status"), "seconds": seconds}
    if report.get("conversion_status") == "unsupported":
        return {"outcome": "refused", "why": "; ".join(report.get("reasons", []))[:300], "seconds": seconds}
    reference = report.get("reference") or {}
    if reference.get("returncode") != 0 or reference.get("timed_out"):
        tail = [l for l in reference.get("tail", []) if l.strip()]
        why = "timed out" if reference.get("timed_out") else (tail[-1] if tail else "; ".join(report.get("reasons", [])))
        return {"outcome": "not runnable", "why": why[:300], "seconds": seconds}
    if report.get("result") == "PASS":
        return {"outcome": "PASS", "why": "", "seconds": seconds}
    return {"outcome": "FAIL", "why": "; ".join(report.get("reasons", []))[:400], "seconds": seconds}


def classify_message(text: str) -> dict:
    """verify stops before running anything when the conversion refuses the
    file or finds no training in it."""
    if "cannot convert (unsupported)" in text:
        return {"outcome": "refused", "why": text.split("cannot convert (unsupported):", 1)[1].strip()[:300]}
    if "nothing to convert" in text:
        return {"outcome": "no training", "why": "no training loop found"}
    return {"outcome": "error", "why": text.strip()[-400:]}


def _last_error(text: str) -> str:
    lines = [l for l in text.splitlines() if "error" in l.lower() or "unsupported" in l.lower() or "refus" in l.lower()]
    return (lines[-1] if lines else text.strip()[-300:])[:300]


def main(argv=None) -> int:
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("trees", nargs="+", type=Path)
    p.add_argument("--held-out", nargs="*", type=Path, default=[], help="trees reported apart")
    p.add_argument("--engines", default="horovod,tf-distribute")
    p.add_argument("-np", type=int, default=2)
    p.add_argument("--timeout", type=int, default=300, help="seconds for each run (original, converted)")
    p.add_argument("--only", help="regex on the file path")
    p.add_argument("--tfdist-src", type=Path, default=ROOT / "src", help="the tfdist measured")
    p.add_argument("--json", type=Path)
    args = p.parse_args(argv)
    engines = [e.strip() for e in args.engines.split(",") if e.strip()]
    pythons = {e: stack_python(e) for e in engines}
    env = dict(os.environ)
    env["PYTHONPATH"] = os.pathsep.join([str(STANDIN), str(args.tfdist_src.resolve())])
    env.setdefault("TFDIST_STANDIN_TRAIN", "2048")
    env.setdefault("TFDIST_STANDIN_TEST", "512")
    rows = []
    for group, trees in (("measured", args.trees), ("held out", args.held_out)):
        for tree in trees:
            for path in candidates(tree):
                rel = f"{tree.name}/{path.relative_to(tree)}"
                if args.only and not re.search(args.only, rel):
                    continue
                row = {"group": group, "repo": tree.name, "file": rel}
                for engine in engines:
                    row[engine] = run_one(path, engine, pythons[engine], args, env)
                    print(f"{rel} [{engine}]: {row[engine]['outcome']} ({row[engine]['seconds']} s) "
                          f"{row[engine]['why'][:160]}", flush=True)
                rows.append(row)
    print()
    for group in ("measured", "held out"):
        part = [r for r in rows if r["group"] == group]
        if not part:
            continue
        print(f"== {group}: {len(part)} files from {len({r['repo'] for r in part})} repositories")
        for engine in engines:
            counts = {}
            for r in part:
                counts[r[engine]["outcome"]] = counts.get(r[engine]["outcome"], 0) + 1
            runnable = sum(v for k, v in counts.items() if k not in ("not runnable", "error", "no training"))
            print(f"  {engine:14s} " + ", ".join(f"{k} {v}" for k, v in sorted(counts.items()))
                  + f"   (PASS {counts.get('PASS', 0)}/{runnable} of those tfdist could be judged on)")
    if args.json:
        args.json.write_text(json.dumps(rows, indent=1))
    return 0


if __name__ == "__main__":
    sys.exit(main())
