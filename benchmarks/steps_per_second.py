"""Training speed of tfdist's conversion against a hand-written Horovod version.

For the Keras and the @tf.function GradientTape examples, runs in the same
session, interleaved: the script converted by tfdist and the hand-written
Horovod twin (benchmarks/handwritten/, written from Horovod's docs), each at
1 and 2 processes under horovodrun (Gloo, CPU). Prints optimizer steps per
second per rank and the ratio converted / hand-written (target >= 0.98: no
per-step broadcast, no extra synchronisation).

Steps/s is differential: each script runs twice, with TFDIST_BENCH_EPOCHS =
SHORT and LONG epochs; rate = (steps_long - steps_short) / (time_long -
time_short), so TensorFlow's import and graph tracing cancel out. Steps and
times come from tfdist's probe (optimizer.iterations and the process's
elapsed time), the slowest rank counting.

    python benchmarks/steps_per_second.py [--repeats 3] [--short 2] [--long 120]

Needs the runtime stack (bash scripts/setup_runtime.sh) and runs with its
python. Not a test: it prints figures. Run it on a quiet machine: other load
shows up directly in the figures.
"""
from __future__ import annotations

import argparse
import os
import statistics
import sys
import tempfile
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT / "src"))

from tfdist.api import convert_file  # noqa: E402
from tfdist.runtime.verify import run_and_observe  # noqa: E402

PAIRS = [
    ("keras", ROOT / "examples/keras_sequential.py", ROOT / "benchmarks/handwritten/keras_sequential_hvd.py"),
    ("tape", ROOT / "examples/tape_tf_function.py", ROOT / "benchmarks/handwritten/tape_tf_function_hvd.py"),
]


def one_run(script: Path, np: int, epochs: int, work: Path):
    env = dict(os.environ, TFDIST_BENCH_EPOCHS=str(epochs), TF_CPP_MIN_LOG_LEVEL="2")
    obs = run_and_observe(script, np, work, timeout=1800, single=False, env=env,
                          log_path=work.with_suffix(".log"), sink=lambda line: None)
    if obs.returncode != 0 or any(r.exit_code != 0 for r in obs.ranks):
        raise SystemExit(f"{script.name} failed at np={np}: {obs.tail[-5:]}")
    steps = min(r.optimizer_steps for r in obs.ranks)
    elapsed = max(r.elapsed_s or obs.duration_s for r in obs.ranks)
    return steps, elapsed


def rate(script: Path, np: int, short: int, long: int, work: Path) -> float:
    s1, t1 = one_run(script, np, short, work / f"{script.stem}-{np}-s")
    s2, t2 = one_run(script, np, long, work / f"{script.stem}-{np}-l")
    return (s2 - s1) / (t2 - t1)


def main() -> int:
    p = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("--repeats", type=int, default=3)
    p.add_argument("--short", type=int, default=2)
    p.add_argument("--long", type=int, default=120)
    args = p.parse_args()
    work = Path(tempfile.mkdtemp(prefix="tfdist-bench-"))
    print(f"{'example':8} {'np':>2} {'converted steps/s':>18} {'hand-written steps/s':>21} {'ratio':>6}"
          f"   (each: median of {args.repeats}, [min-max])")
    for name, example, handwritten in PAIRS:
        result = convert_file(example)
        assert result.status == "converted", result.error
        converted = work / f"{example.stem}_tfdist.py"
        converted.write_bytes(result.data)
        for np in (1, 2):
            conv, hand = [], []
            for _ in range(args.repeats):  # interleaved, so drift hits both alike
                conv.append(rate(converted, np, args.short, args.long, work))
                hand.append(rate(handwritten, np, args.short, args.long, work))
            c, h = statistics.median(conv), statistics.median(hand)
            print(f"{name:8} {np:>2} {c:>18.1f} {h:>21.1f} {c / h:>6.3f}"
                  f"   converted [{min(conv):.0f}-{max(conv):.0f}], hand-written [{min(hand):.0f}-{max(hand):.0f}]",
                  flush=True)
    return 0


if __name__ == "__main__":
    sys.exit(main())
