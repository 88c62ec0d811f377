"""Do both engines train the same? Every bundled TF2 example, converted with
``--backend horovod`` (run on TensorFlow 2.15 + Horovod under horovodrun)
and with ``--backend tf-distribute`` (run on TensorFlow 2.21 as TF_CONFIG
workers), on 2 processes, next to the original on one process; prints the
final training loss each prints (``final loss X``) and the gap between the
engines.

    python benchmarks/engine_agreement.py [-np 2] [--tolerance 0.25] [EXAMPLE.py ...]

The two runtime stacks are the project's own (``scripts/setup_runtime.sh``
and ``scripts/setup_runtime.sh tf-distribute``; set TFDIST_VENV /
TFDIST_TF_DISTRIBUTE_VENV to reuse others). Exit status 1 when the engines'
final losses differ by more than the tolerance: 25% of the original's loss
or 0.05, whichever is larger.
"""
from __future__ import annotations

import argparse
import os
import re
import shutil
import subprocess
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
TF2_EXAMPLES = ["keras_sequential.py", "keras_numpy.py", "keras_subclassed.py",
                "tape_tf_function.py", "tape_gan.py", "tape_raw_variables.py"]
FINAL = re.compile(r"final loss (-?[0-9.]+(?:e-?[0-9]+)?)")


def _venv(env_var: str, *setup_args: str) -> Path:
    if os.environ.get(env_var):
        return Path(os.environ[env_var])
    out = subprocess.run(["bash", str(ROOT / "scripts" / "setup_runtime.sh"), *setup_args],
                         check=True, stdout=subprocess.PIPE, text=True).stdout
    return Path(out.strip().splitlines()[-1])


def _final_loss(output: str):
    """The last ``final loss`` rank 0 (or the single process) printed."""
    values = []
    for line in output.splitlines():
        if line.startswith("[") and not line.startswith("[0]"):
            continue
        m = FINAL.search(line)
        if m:
            values.append(float(m.group(1)))
    return values[-1] if values else None


def _run(cmd, cwd: Path, timeout: float):
    env = {k: v for k, v in os.environ.items() if k != "TF_CONFIG"}
    env["TF_CPP_MIN_LOG_LEVEL"] = "2"
    start = time.time()
    p = subprocess.run(cmd, cwd=cwd, env=env, stdout=subprocess.PIPE, stderr=subprocess.STDOUT,
                       text=True, timeout=timeout)
    return p.returncode, p.stdout, time.time() - start


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("-np", type=int, default=2)
    ap.add_argument("--tolerance", type=float, default=0.25,
                    help="largest |loss(horovod) - loss(tf-distribute)| as a share of loss(original) (default 0.25)")
    ap.add_argument("--abs-tolerance", type=float, default=0.05,
                    help="...or this absolute gap, whichever is larger (small losses; default 0.05)")
    ap.add_argument("--timeout", type=float, default=900)
    ap.add_argument("examples", nargs="*", default=TF2_EXAMPLES)
    args = ap.parse_args(argv)
    hvd = _venv("TFDIST_VENV")
    tfd = _venv("TFDIST_TF_DISTRIBUTE_VENV", "tf-distribute")
    rows, worst, failed = [], 0.0, False
    for name in args.examples:
        src = (ROOT / "examples" / name) if not os.path.isabs(name) else Path(name)
        work = Path(tempfile.mkdtemp(prefix="tfdist-agree-"))
        try:
            results = {}
            for label, venv, cmd in (
                ("original", hvd, [str(hvd / "bin" / "python"), str(src)]),
                ("horovod", hvd, None),
                ("tf-distribute", tfd, None),
            ):
                run_dir = work / label
                run_dir.mkdir()
                if cmd is None:
                    converted = work / f"{label}_{src.name}"
                    subprocess.run([str(venv / "bin" / "tfdist"), "convert", str(src), "--backend", label,
                                    "-o", str(converted), "-q"], check=True)
                    cmd = [str(venv / "bin" / "tfdist"), "run", "--backend", label, "-np", str(args.np),
                           "--timeout", str(args.timeout), str(converted)]
                rc, out, seconds = _run(cmd, run_dir, args.timeout + 60)
                results[label] = (rc, _final_loss(out), seconds, out)
            orig = results["original"][1]
            h, t = results["horovod"][1], results["tf-distribute"][1]
            gap = abs(h - t) / abs(orig) if None not in (orig, h, t) and orig else float("inf")
            within = gap != float("inf") and abs(h - t) <= max(args.tolerance * abs(orig), args.abs_tolerance)
            failed = failed or not within
            worst = max(worst, gap)
            rows.append((src.name, results, gap, within))
            for label, (rc, loss, _, out) in results.items():
                if rc != 0 or loss is None:
                    print(f"--- {src.name} {label}: exit {rc}, no final loss\n{out[-3000:]}", file=sys.stderr)
        finally:
            shutil.rmtree(work, ignore_errors=True)
    print(f"| example | original (1 process) | horovod TF 2.15 ({args.np} proc) | tf-distribute TF 2.21 "
          f"({args.np} workers) | gap / original | within |")
    print("|---|---|---|---|---|---|")
    for name, results, gap, within in rows:
        cells = []
        for label in ("original", "horovod", "tf-distribute"):
            rc, loss, seconds, _ = results[label]
            cells.append(f"{loss:.4f} ({seconds:.0f} s)" if rc == 0 and loss is not None else f"FAILED (exit {rc})")
        print(f"| {name} | " + " | ".join(cells) + f" | {gap:.1%} | {'yes' if within else 'NO'} |")
    ok = not failed
    print(f"tolerance: |horovod - tf-distribute| <= max({args.tolerance:.0%} of the original's loss, "
          f"{args.abs_tolerance}); largest relative gap {worst:.1%}: {'PASS' if ok else 'FAIL'}")
    return 0 if ok else 1


if __name__ == "__main__":
    sys.exit(main())
