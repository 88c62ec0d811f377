"""Does the distributed script still learn?  ``tfdist verify --compare``.

The probe records the training loss of every run from outside the script
(``TFDIST_PROBE_LOSSES``: Keras ``fit`` logs, ``tape.gradient`` targets, the
loss a TF1 train op minimises).  This module turns a run's records into
loss curves, compares the converted run with the original, judges it
against a stated tolerance, and draws the curves.

A curve's x axis is *the share of the data seen*, so that a run on N
processes (1/N of the steps, N times the batch) lines up with the original:

* Keras ``fit``: epochs (each epoch is one pass over the data in both runs);
* step loops: the share of the run's optimizer steps, shown as samples seen
  when both runs recorded their trained samples (sum over the ranks).

Verdict (one per converted run): every loss series' final value (``fit``:
the last epoch's loss as Keras logs it; step loops: the mean of the last
10% of steps, at least one) must be finite and no worse than the
original's by more than ``max(rel_tolerance * |original|, abs_tolerance)``;
``fit`` metrics whose name ends in ``loss`` (``val_loss``) are judged the
same way, the others are shown.
"""
from __future__ import annotations

import math
import os
from dataclasses import dataclass, field
from typing import Sequence

#: Default tolerance: a converted run's final loss may exceed the original's
#: by max(REL x |original|, ABS).  Both engines' conversions of the bundled
#: examples stay within it (benchmarks/convergence.py, README "Figures").
DEFAULT_REL_TOLERANCE = 0.25
DEFAULT_ABS_TOLERANCE = 0.05
#: Share of the last steps averaged into a step loop's final loss.
FINAL_SHARE = 0.1


@dataclass
class Curve:
    """One run's training loss: ``series`` lists of (x, loss) points
    (several for a step with several tapes, e.g. a GAN), with x in [0, 1]
    (share of training) or in epochs (``fit``)."""
    label: str
    kind: str                            # "fit" | "steps" | "none"
    series: list[list[tuple[float, float]]] = field(default_factory=list)
    finals: list[float] = field(default_factory=list)
    metrics: dict = field(default_factory=dict)       # fit: the last epoch's logs besides loss
    steps: int = 0                       # optimizer steps per process
    samples_seen: int | None = None      # trained samples, all processes together
    wall_s: float | None = None
    processes: int = 1
    policy: str | None = None            # the learning-rate policy of a converted run
    note: str | None = None              # why nothing was recorded

    @property
    def final(self) -> float | None:
        return self.finals[0] if self.finals else None

    def to_dict(self) -> dict:
        return {"label": self.label, "kind": self.kind, "policy": self.policy, "processes": self.processes,
                "final_loss": self.final, "final_losses": self.finals, "final_metrics": self.metrics,
                "steps": self.steps, "samples_seen": self.samples_seen, "wall_s": self.wall_s,
                "note": self.note, "curves": [[[round(x, 6), y] for x, y in s] for s in self.series]}


@dataclass
class Comparison:
    """A converted run against the original."""
    original: Curve
    converted: Curve
    rel_tolerance: float
    abs_tolerance: float
    reasons: list[str] = field(default_factory=list)    # empty: within tolerance
    ratios: list[float | None] = field(default_factory=list)
    curve_gap: float | None = None       # mean |converted - original| / |original| along the curve
    floor_only: bool = False             # within tolerance only by the absolute floor (small losses)

    @property
    def passed(self) -> bool:
        return not self.reasons

    @property
    def ratio(self) -> float | None:
        return self.ratios[0] if self.ratios else None

    def to_dict(self) -> dict:
        return {"verdict": "PASS" if self.passed else "FAIL", "reasons": self.reasons, "floor_only": self.floor_only,
                "rel_tolerance": self.rel_tolerance, "abs_tolerance": self.abs_tolerance,
                "loss_ratio": self.ratio, "loss_ratios": self.ratios, "curve_gap": self.curve_gap,
                "original": self.original.to_dict(), "converted": self.converted.to_dict()}


# --------------------------------------------------------------------------
# Curves from probe records
# --------------------------------------------------------------------------

def _mean(values: Sequence[float]) -> float:
    return sum(values) / len(values)


def _batches_agree_with_epochs(losses: list[dict]) -> bool:
    """Keras logs the running mean of the epoch after each batch, so an
    epoch's last batch log equals its epoch log, averaged over the processes
    (Horovod's MetricAverageCallback averages the epoch logs over the ranks).
    tf-keras under MultiWorkerMirroredStrategy logs per-batch losses summed
    over the workers (its epoch logs are right): such batch logs are not used."""
    last: dict = {}
    for record_losses in losses:
        for call, epoch, _, logs in record_losses.get("fit_batches") or []:
            if "loss" in logs:
                last.setdefault((call, epoch), {})[id(record_losses)] = logs["loss"]
    epochs: dict = {}
    for record_losses in losses:
        for call, epoch, logs in record_losses.get("fit_epochs") or []:
            if "loss" in logs:
                epochs.setdefault((call, epoch), []).append(logs["loss"])
    for key, values in epochs.items():
        if key not in last or len(last[key]) != len(losses):
            continue
        a, b = _mean(list(last[key].values())), _mean(values)
        if _finite(a) and _finite(b) and abs(a - b) > 0.02 * max(abs(b), 1e-12):
            return False
    return True


def _fit_curve(losses: list[dict]) -> tuple[list[tuple[float, float]], list[dict]] | None:
    """Per-batch running losses (x in epochs) and per-epoch logs, averaged
    over the processes position by position (no batch points when a
    process's batch logs disagree with its epoch logs)."""
    per_rank_epochs = [l.get("fit_epochs") or [] for l in losses]
    if not any(per_rank_epochs):
        return None
    n_epochs = min(len(e) for e in per_rank_epochs)
    epochs = []
    for i in range(n_epochs):
        keys = set.intersection(*(set(e[i][2]) for e in per_rank_epochs))
        epochs.append({k: _mean([e[i][2][k] for e in per_rank_epochs]) for k in sorted(keys)})
    per_rank_points = []
    if not _batches_agree_with_epochs(losses):
        return [], epochs
    for l in losses:
        batches = l.get("fit_batches") or []
        per_epoch: dict[tuple[int, int], int] = {}
        for call, epoch, batch, _ in batches:
            per_epoch[(call, epoch)] = max(per_epoch.get((call, epoch), 0), batch + 1)
        order = sorted(per_epoch)
        index = {key: i for i, key in enumerate(order)}
        points = [(index[(c, e)] + (b + 1) / per_epoch[(c, e)], logs["loss"])
                  for c, e, b, logs in batches if "loss" in logs]
        per_rank_points.append(points)
    n = min(len(p) for p in per_rank_points) if per_rank_points else 0
    points = [(per_rank_points[0][i][0], _mean([p[i][1] for p in per_rank_points])) for i in range(n)]
    return points, epochs


def _step_series(record_losses: dict, optimizer_steps: int) -> list[list[float]]:
    """One process's loss values split into interleaved series (a step whose
    tapes call gradient() k times gives k values per optimizer step)."""
    points = record_losses.get("steps") or []
    seen = int(record_losses.get("seen") or len(points))
    k = 1
    if optimizer_steps and seen > optimizer_steps and seen % optimizer_steps == 0:
        k = seen // optimizer_steps
    series: list[dict[int, float]] = [dict() for _ in range(k)]
    for seq, value in points:
        series[seq % k][seq // k] = value
    return [[s[i] for i in sorted(s)] for s in series]


def curve_of(observation, label: str | None = None, policy: str | None = None) -> Curve:
    """The loss curve of one probed run (an Observation from verify)."""
    records = [r for r in observation.ranks if not r.missing]
    curve = Curve(label=label or observation.label, kind="none", processes=observation.np,
                  wall_s=round(observation.duration_s, 2), policy=policy)
    losses = [r.raw.get("losses") for r in records]
    if not records or any(l is None for l in losses):
        curve.note = "no loss was recorded (the run did not reach the probe's loss recording)"
        return curve
    curve.steps = max(r.optimizer_steps for r in records)
    rows = [r.samples.get("rows") for r in records]
    if all(isinstance(n, int) and n > 0 for n in rows) and not any(r.samples.get("capped") for r in records):
        curve.samples_seen = sum(rows)
    fit = _fit_curve(losses)
    if fit is not None:
        points, epochs = fit
        curve.kind = "fit"
        if not points:
            curve.note = "curve from the epoch logs: the per-batch logs disagree with them"
        curve.series = [points] if points else [[(float(i + 1), e["loss"]) for i, e in enumerate(epochs)
                                                  if "loss" in e]]
        last = epochs[-1] if epochs else {}
        if "loss" in last:
            curve.finals = [last["loss"]]
        curve.metrics = {k: v for k, v in last.items() if k != "loss"}
        return curve
    per_rank = [_step_series(l, r.optimizer_steps) for l, r in zip(losses, records)]
    k = min(len(s) for s in per_rank)
    if not k or not all(all(series) for series in per_rank):
        curve.note = "no loss was recorded (no Keras fit, tape.gradient or TF1 train op ran)"
        return curve
    curve.kind = "steps"
    for j in range(k):
        n = min(len(s[j]) for s in per_rank)
        values = [_mean([s[j][i] for s in per_rank]) for i in range(n)]
        curve.series.append([((i + 1) / n, v) for i, v in enumerate(values)])
        tail = values[-max(1, int(round(n * FINAL_SHARE))):]
        curve.finals.append(_mean(tail))
    return curve


# --------------------------------------------------------------------------
# Comparison
# --------------------------------------------------------------------------

def _finite(value) -> bool:
    return value is not None and isinstance(value, (int, float)) and math.isfinite(value)


def _interp(points: list[tuple[float, float]], x: float) -> float:
    if x <= points[0][0]:
        return points[0][1]
    for (x0, y0), (x1, y1) in zip(points, points[1:]):
        if x0 <= x <= x1:
            return y0 if x1 == x0 else y0 + (y1 - y0) * (x - x0) / (x1 - x0)
    return points[-1][1]


def curve_gap(original: Curve, converted: Curve) -> float | None:
    """Mean relative distance of the converted curve from the original's
    (first series), on 50 points of the common x range. Distances are
    relative to the original's value there, but never to less than 1% of
    its largest value: a loss that falls to ~0 would make any gap huge."""
    if not original.series or not converted.series or not original.series[0] or not converted.series[0]:
        return None
    a, b = original.series[0], converted.series[0]
    lo, hi = max(a[0][0], b[0][0]), min(a[-1][0], b[-1][0])
    if hi < lo:
        return None
    xs = [lo + (hi - lo) * i / 49 for i in range(50)]
    floor = max([abs(y) for _, y in a if _finite(y)] + [0.0]) * 0.01
    gaps = []
    for x in xs:
        ya, yb = _interp(a, x), _interp(b, x)
        if not (_finite(ya) and _finite(yb)):
            return float("inf")
        gaps.append(abs(yb - ya) / max(abs(ya), floor, 1e-12))
    return _mean(gaps)


def _worse(name: str, original: float, converted: float, rel: float, abs_: float) -> str | None:
    """Why the converted run's value is too far above the original's, or None."""
    if not _finite(original):
        return f"the original run's final {name} is {original}: nothing to compare with"
    if not _finite(converted):
        return f"the converted run's final {name} is {converted}: it diverged"
    allowed = max(rel * abs(original), abs_)
    if converted - original <= allowed:
        return None
    ratio = f"ratio {converted / original:.2f}; " if original else ""
    return (f"the converted run's final {name} {converted:.4g} is worse than the original's {original:.4g} "
            f"by {converted - original:.4g} ({ratio}tolerance: max({rel:g} x original, {abs_:g}) = {allowed:.4g})")


def compare(original: Curve, converted: Curve, rel_tolerance: float = DEFAULT_REL_TOLERANCE,
            abs_tolerance: float = DEFAULT_ABS_TOLERANCE) -> Comparison:
    """Judge a converted run's curve against the original's."""
    result = Comparison(original, converted, rel_tolerance, abs_tolerance)
    if original.kind == "none" or not original.finals:
        result.reasons.append(f"cannot compare: the original run recorded no training loss ({original.note})")
        return result
    if converted.kind == "none" or not converted.finals:
        result.reasons.append(f"cannot compare: the converted run recorded no training loss ({converted.note})")
        return result
    if len(original.finals) != len(converted.finals):
        result.reasons.append(f"the original minimised {len(original.finals)} loss(es) per step, the converted run "
                              f"{len(converted.finals)}")
        return result
    many = len(original.finals) > 1
    for i, (a, b) in enumerate(zip(original.finals, converted.finals)):
        name = f"loss[{i}]" if many else "loss"
        result.ratios.append(b / a if _finite(a) and _finite(b) and a else None)
        why = _worse(name, a, b, rel_tolerance, abs_tolerance)
        if why:
            result.reasons.append(why)
        elif _finite(a) and _finite(b) and b - a > rel_tolerance * abs(a):
            result.floor_only = True
    for name, a in original.metrics.items():
        if not name.endswith("loss") or name not in converted.metrics:
            continue
        why = _worse(name, a, converted.metrics[name], rel_tolerance, abs_tolerance)
        if why:
            result.reasons.append(why)
    result.curve_gap = curve_gap(original, converted)
    return result


def best_of(comparisons: list[Comparison]) -> Comparison | None:
    """The converted run that tracks the original best: among those within
    tolerance (else all), the smallest |final loss ratio - 1|, then the
    smallest curve gap."""
    pool = [c for c in comparisons if c.passed] or comparisons
    def key(c: Comparison):
        r = c.ratio
        return (abs(r - 1) if _finite(r) else float("inf"),
                c.curve_gap if _finite(c.curve_gap) else float("inf"))
    return min(pool, key=key) if pool else None


# --------------------------------------------------------------------------
# Text and picture
# --------------------------------------------------------------------------

def format_number(value, fmt: str = ".4f") -> str:
    """A number for a report line: ``fmt`` when finite, "-" for None."""
    return format(value, fmt) if _finite(value) else ("-" if value is None else str(value))


def format_table(comparisons: list[Comparison]) -> list[str]:
    """Side by side: the original, then each converted run."""
    if not comparisons:
        return []
    orig = comparisons[0].original
    metric_names = sorted(orig.metrics)
    head = (f"  {'run':<28}{'final loss':>11}{'ratio':>8}{'curve gap':>10}  "
            + "".join(f"{m:>13}" for m in metric_names) + f"{'samples seen':>14}{'steps':>7}{'wall s':>8}  verdict")
    lines = [head]

    def row(label, c: Curve, ratio, gap, verdict):
        finals = "/".join(format_number(f) for f in c.finals) or "-"
        return (f"  {label:<28}{finals:>11}{format_number(ratio, '.3f'):>8}"
                f"{format_number(gap, '.1%'):>10}  "
                + "".join(f"{format_number(c.metrics.get(m)):>13}" for m in metric_names)
                + f"{c.samples_seen if c.samples_seen is not None else '-':>14}{c.steps:>7}"
                + f"{format_number(c.wall_s, '.1f'):>8}  {verdict}")

    lines.append(row(orig.label, orig, None, None, ""))
    for c in comparisons:
        lines.append(row(c.converted.label, c.converted, c.ratio, c.curve_gap,
                         ("PASS*" if c.floor_only else "PASS") if c.passed else "FAIL"))
    lines.append(f"  (final loss: {_final_phrase(orig)}; ratio: converted / original; curve gap: mean relative "
                 f"distance of the curves; tolerance: the converted final loss (and val_loss) at most "
                 f"max({comparisons[0].rel_tolerance:g} x original, {comparisons[0].abs_tolerance:g}) above the original's)")
    if any(c.floor_only for c in comparisons):
        lines.append(f"  PASS*: more than {comparisons[0].rel_tolerance:g} x the original's loss above it, within only the "
                     f"absolute floor {comparisons[0].abs_tolerance:g} (small losses): look at the curves, or set "
                     "--abs-tolerance lower")
    return lines


def _final_phrase(c: Curve) -> str:
    if c.kind == "fit":
        return "the last epoch's loss as Keras logs it"
    return f"mean of the last {FINAL_SHARE:.0%} of steps" + (" per series (one per tape)" if len(c.finals) > 1 else "")


def x_axis(curves: list[Curve]) -> tuple[str, list[float]]:
    """The x label and, per curve, the factor its x values are multiplied by."""
    if all(c.kind == "fit" for c in curves):
        return "epochs (passes over the training data)", [1.0] * len(curves)
    if all(c.kind == "steps" and c.samples_seen for c in curves):
        return "samples seen (all processes)", [float(c.samples_seen) for c in curves]
    return "share of training (optimizer steps / all steps of the run)", [1.0] * len(curves)


class PlotUnavailable(RuntimeError):
    """--plot needs matplotlib (pip install 'tfdist[plot]')."""


def plot(comparisons: list[Comparison], path: str | os.PathLike, title: str) -> str:
    """Draw the original's and every converted run's loss curves into a PNG."""
    try:
        import matplotlib
        matplotlib.use("Agg")
        import matplotlib.pyplot as plt
    except ImportError as exc:
        raise PlotUnavailable("--plot needs matplotlib: pip install 'tfdist[plot]' (or matplotlib)") from exc
    curves = [comparisons[0].original] + [c.converted for c in comparisons]
    xlabel, factors = x_axis(curves)
    fig, ax = plt.subplots(figsize=(8, 4.8), dpi=110)
    for i, (curve, factor) in enumerate(zip(curves, factors)):
        for j, series in enumerate(curve.series):
            if not series:
                continue
            xs = [x * factor for x, _ in series]
            ys = [y for _, y in series]
            name = curve.label + (f" loss[{j}]" if len(curve.series) > 1 else "")
            if i and comparisons[i - 1].passed is False:
                name += " (FAIL)"
            ax.plot(xs, ys, label=name, linewidth=2.2 if i == 0 else 1.4, color="black" if i == 0 else None,
                    linestyle="-" if j == 0 else "--", alpha=0.9)
    finite = [y for c in curves for s in c.series for _, y in s if _finite(y)]
    if finite and max(finite) > 50 * max(min(abs(v) for v in finite), 1e-12) and min(finite) > 0:
        ax.set_yscale("log")
    ax.set_xlabel(xlabel)
    ax.set_ylabel("training loss")
    ax.set_title(title, fontsize=10)
    ax.grid(True, alpha=0.3)
    ax.legend(fontsize=8)
    fig.tight_layout()
    tmp = f"{os.fspath(path)}.tmp{os.getpid()}.png"
    fig.savefig(tmp)
    plt.close(fig)
    os.replace(tmp, path)
    return os.fspath(path)
