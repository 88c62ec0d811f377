"""Does the converted script still learn like the original, and under which
learning-rate policy?  Every chosen bundled example (all four patterns: Keras
fit, GradientTape, TF1 Session, TF1 MonitoredTrainingSession), converted for
Horovod under each learning-rate policy, run on N = 2 and 4 processes next
to the original on 1, on the data each example makes from fixed seeds.

Each (example, N) is one ``tfdist verify --sweep`` call (the original runs
once, each policy's conversion once), so the figures are exactly what a user
gets from that command.  Prints a Markdown table of final training losses,
their ratio to the original's, the verify verdict and the policy that tracks
best, and draws every curve into one picture.

    python benchmarks/convergence.py [-np 2 4] [--policies linear,sqrt,none] [--warmup linear:warmup=1]
        [--plot benchmarks/figures/convergence.png] [--epochs E] [EXAMPLE.py ...]

Runs on the project's Horovod stack (``scripts/setup_runtime.sh``; set
TFDIST_VENV to reuse another), and re-runs itself with that stack's Python,
which draws the picture (matplotlib).  About 10 minutes on 2 cores (4 processes
share them: wall times are not the point here).
"""
from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
EXAMPLES = [("keras_sequential.py", "Keras fit"), ("keras_numpy.py", "Keras fit"),
            ("tape_tf_function.py", "GradientTape"), ("tape_raw_variables.py", "GradientTape"),
            ("tf1_session.py", "TF1 Session"), ("tf1_monitored_session.py", "TF1 MonitoredSession")]
#: --steps-per-epoch for the warmup where the converter cannot see an epoch:
#: the TF1 examples' graphs are built before their loops run (1003 samples,
#: batches of 32: 32 steps per epoch).
STEPS_PER_EPOCH = {"tf1_session.py": 32, "tf1_monitored_session.py": 32}


def _venv() -> Path:
    if os.environ.get("TFDIST_VENV"):
        return Path(os.environ["TFDIST_VENV"])
    out = subprocess.run(["bash", str(ROOT / "scripts" / "setup_runtime.sh")], check=True,
                         stdout=subprocess.PIPE, text=True).stdout
    return Path(out.strip().splitlines()[-1])


def _sweep(python: Path, example: Path, np: int, policies: str, env: dict, timeout: float) -> dict:
    with tempfile.TemporaryDirectory(prefix="tfdist-convergence-") as tmp:
        report = Path(tmp) / "report.json"
        steps = STEPS_PER_EPOCH.get(example.name)
        cmd = [str(python), "-m", "tfdist.runtime.commands", "verify", "-np", str(np), "--sweep",
               "--policies", policies, "--report", str(report), "--timeout", str(timeout),
               *(["--steps-per-epoch", str(steps)] if steps else []), str(example)]
        p = subprocess.run(cmd, cwd=tmp, env=env, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True,
                           timeout=timeout * 8)
        if not report.exists():
            raise RuntimeError(f"{example.name} -np {np}: no report (exit {p.returncode})\n{p.stderr[-3000:]}")
        return json.loads(report.read_text())


def _cell(policy: dict) -> str:
    cmp = policy["compare"]
    loss, ratio = cmp["converted"]["final_loss"], cmp["loss_ratio"]
    if loss is None:
        return "no loss"
    verdict = ("PASS*" if cmp.get("floor_only") else "PASS") if policy["passed"] else "FAIL"
    return f"{loss:.4f} (x{ratio:.2f}) {verdict}" if ratio is not None else f"{loss} {verdict}"


def _plot(results: list, path: Path, nps: list[int]) -> None:
    import matplotlib
    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    names = sorted({r["example"] for r in results}, key=[e for e, _ in EXAMPLES].index)
    fig, axes = plt.subplots(len(names), len(nps), figsize=(5.2 * len(nps), 2.9 * len(names)), squeeze=False,
                             dpi=90)
    for r in results:
        ax = axes[names.index(r["example"])][nps.index(r["np"])]
        first = r["sweep"]["policies"][0]["compare"]["original"]
        kind = first["kind"]
        runs = [("original (1 process)", first, dict(color="black", linewidth=2.2))]
        runs += [(p["policy"] + ("" if p["passed"] else " (FAIL)"), p["compare"]["converted"], dict(linewidth=1.3))
                 for p in r["sweep"]["policies"]]
        for label, curve, style in runs:
            if not curve["curves"] or not curve["curves"][0]:
                continue
            scale = 1.0
            if kind == "steps" and first.get("samples_seen") and curve.get("samples_seen"):
                scale = float(curve["samples_seen"])
            xs = [x * scale for x, _ in curve["curves"][0]]
            ax.plot(xs, [y for _, y in curve["curves"][0]], label=label, **style)
        ax.set_title(f"{r['example']} ({r['pattern']}), N={r['np']}", fontsize=9)
        ax.set_xlabel("epochs" if kind == "fit" else ("samples seen" if first.get("samples_seen")
                                                      else "share of training"), fontsize=8)
        ax.set_ylabel("training loss", fontsize=8)
        ax.tick_params(labelsize=7)
        ax.grid(True, alpha=0.3)
        ax.legend(fontsize=7)
    fig.tight_layout()
    path.parent.mkdir(parents=True, exist_ok=True)
    fig.savefig(path)
    plt.close(fig)


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("-np", type=int, nargs="+", default=[2, 4])
    ap.add_argument("--policies", default="linear,sqrt,none")
    ap.add_argument("--warmup", default="linear:warmup=1",
                    help="a warmup policy added for every example ('' for none); the TF1 examples' epoch "
                         "length is given with --steps-per-epoch (STEPS_PER_EPOCH)")
    ap.add_argument("--plot", default=str(ROOT / "benchmarks" / "figures" / "convergence.png"))
    ap.add_argument("--epochs", type=int, help="TFDIST_BENCH_EPOCHS for every example (default: each example's own)")
    ap.add_argument("--timeout", type=float, default=600)
    ap.add_argument("examples", nargs="*")
    args = ap.parse_args(argv)
    chosen = [(e, p) for e, p in EXAMPLES if not args.examples or e in args.examples]
    venv = _venv()
    if Path(sys.prefix).resolve() != venv.resolve():
        # the picture is drawn here: run in the stack, which has matplotlib (and TensorFlow)
        env = dict(os.environ, TFDIST_VENV=str(venv))
        python = str(venv / "bin" / "python")
        os.execve(python, [python, __file__, *(sys.argv[1:] if argv is None else argv)], env)
    env = {k: v for k, v in os.environ.items() if k not in ("TF_CONFIG", "PYTHONPATH")}
    env["PYTHONPATH"] = str(ROOT / "src")
    env["TF_CPP_MIN_LOG_LEVEL"] = "2"
    env["PATH"] = f"{venv / 'bin'}{os.pathsep}{env.get('PATH', '')}"
    if args.epochs:
        env["TFDIST_BENCH_EPOCHS"] = str(args.epochs)
    policies = args.policies.split(",") + ([args.warmup] if args.warmup else [])
    results = []
    start = time.time()
    for example, pattern in chosen:
        for np in args.np:
            t0 = time.time()
            chosen_policies = args.policies + (f",{args.warmup}" if args.warmup else "")
            sweep = _sweep(venv / "bin" / "python", ROOT / "examples" / example, np, chosen_policies, env,
                           args.timeout)
            results.append({"example": example, "pattern": pattern, "np": np, "sweep": sweep})
            print(f"  {example} N={np}: best {sweep['best_policy']} ({time.time() - t0:.0f} s)", file=sys.stderr)
    print(f"| example | pattern | N | original (1 process) | " + " | ".join(policies) + " | best |")
    print("|---|---|---|---|" + "---|" * len(policies) + "---|")
    for r in results:
        by_policy = {p["policy"]: p for p in r["sweep"]["policies"]}
        orig = r["sweep"]["policies"][0]["compare"]["original"]["final_loss"]
        cells = [_cell(by_policy[p]) if p in by_policy else "-" for p in policies]
        print(f"| {r['example']} | {r['pattern']} | {r['np']} | {orig:.4f} | " + " | ".join(cells)
              + f" | {r['sweep']['best_policy']} |")
    tol = results[0]["sweep"]["policies"][0]["compare"] if results else {}
    print(f"\nfinal loss (x ratio to the original) and verdict of `tfdist verify --compare`: within "
          f"max({tol.get('rel_tolerance')} x original, {tol.get('abs_tolerance')}) of the original's final loss; "
          f"PASS*: within only the absolute floor; {len(results)} sweeps in {time.time() - start:.0f} s")
    if args.plot:
        try:
            _plot(results, Path(args.plot), args.np)
            print(f"curves: {args.plot}")
        except ImportError:
            print("matplotlib is not installed: no plot", file=sys.stderr)
    return 0


if __name__ == "__main__":
    sys.exit(main())
