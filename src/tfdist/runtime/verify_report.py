"""How `tfdist verify` shows its results: the typed checks (verify_checks)
as the text lines of the reasons/checks lists, the report types with their
JSON (--json) and the text report with its per-rank table."""
from __future__ import annotations

import os
from dataclasses import dataclass, field

from . import compare as C
from .verify_results import Check, brief, rel_path
from .verify_records import HOROVOD, TF_DISTRIBUTE, Observation, RankRecord


def shown(check: Check) -> bool:
    """Whether the check has a line of its own in the text: a failure unless
    another check's sentence already says it, a pass when it has a sentence."""
    if check.passed:
        return bool(check.detail)
    return check.said_by is None


def reason_lines(checks: list[Check]) -> list[str]:
    """The failure reasons (``FAIL: ...`` lines, the ``reasons`` of --json)."""
    return [c.detail or f"{c.name} failed" for c in checks if not c.passed and shown(c)]


def check_lines(checks: list[Check]) -> list[str]:
    """What was established (``ok: ...`` lines, the ``checks`` of --json)."""
    return [c.detail for c in checks if c.passed and shown(c)]


def as_text(checks: list[Check]) -> tuple[list[str], list[str]]:
    """(reasons, checks) as text lines."""
    return reason_lines(checks), check_lines(checks)


@dataclass
class VerifyReport:
    script: str
    np: int
    passed: bool
    reasons: list[str]                 # why it failed (empty on PASS)
    checks: list[str]                  # what was established (one line each)
    warnings: list[str]
    reference: Observation | None
    distributed: Observation | None
    converted_path: str | None = None
    conversion_status: str | None = None
    steps_cap: int | None = None
    workdir: str | None = None
    samples: dict | None = None        # sample-check summary (check_samples)
    policy: str | None = None          # the learning-rate policy the script was converted with
    comparison: C.Comparison | None = None   # --compare: the converted run's loss against the original's
    #: The typed checks ``reasons`` and ``checks`` were rendered from (empty
    #: for a report built from text, as tests do).
    check_results: list[Check] = field(default_factory=list)
    #: Checks that do not apply to this run, each "name: why" (parameter servers).
    skipped: list[str] = field(default_factory=list)
    #: The processes' labels in rank order when they are not plain ranks
    #: (parameter servers: "chief:0", "worker:0", "ps:0").
    task_labels: list[str] = field(default_factory=list)

    @property
    def exit_code(self) -> int:
        return 0 if self.passed else 1

    def to_dict(self) -> dict:
        return {
            "script": self.script, "np": self.np, "result": "PASS" if self.passed else "FAIL",
            "passed": self.passed, "reasons": self.reasons, "checks": self.checks, "warnings": self.warnings,
            "converted_path": self.converted_path, "conversion_status": self.conversion_status,
            "steps_cap": self.steps_cap, "workdir": self.workdir, "samples": self.samples,
            "policy": self.policy, "compare": self.comparison.to_dict() if self.comparison else None,
            "reference": self.reference.to_dict() if self.reference else None,
            "distributed": self.distributed.to_dict() if self.distributed else None,
            "check_results": [c.to_dict() for c in self.check_results],
            "skipped": self.skipped, "task_labels": self.task_labels,
        }

    def format_text(self) -> str:
        return format_report(self)



@dataclass
class SweepReport:
    """The original once, the conversion under several learning-rate policies."""
    script: str
    np: int
    reports: list[VerifyReport]
    best: str | None
    workdir: str | None = None
    skipped: list[tuple[str, str]] = field(default_factory=list)   # default policies not converted: (policy, why)

    @property
    def comparisons(self) -> list[C.Comparison]:
        return [r.comparison for r in self.reports if r.comparison is not None]

    @property
    def exit_code(self) -> int:
        best = next((r for r in self.reports if r.policy == self.best), None)
        return 0 if best is not None and best.passed else 1

    def to_dict(self) -> dict:
        return {"script": self.script, "np": self.np, "result": "PASS" if self.exit_code == 0 else "FAIL",
                "best_policy": self.best, "workdir": self.workdir,
                "skipped": [{"policy": p, "reason": why} for p, why in self.skipped],
                "policies": [r.to_dict() for r in self.reports]}

    def format_text(self) -> str:
        engine = self.reports[0].distributed.backend if self.reports and self.reports[0].distributed else HOROVOD
        lines = [f"tfdist verify --sweep {self.script}  ({self.np} {'workers' if engine == TF_DISTRIBUTE else 'ranks'}; "
                 f"the original once, the conversion under {len(self.reports)} learning-rate policies)"]
        for policy, why in self.skipped:
            lines.append(f"  {policy}: not tried: {brief(why, 220)}")
        for r in self.reports:
            lines.append(f"  {r.policy}: {'PASS' if r.passed else 'FAIL'}"
                         + ("" if r.passed else ": " + "; ".join(brief(x, 220) for x in r.reasons)))
        lines.extend(C.format_table(self.comparisons))
        best = next((r for r in self.reports if r.policy == self.best), None)
        if best is not None:
            lines.append(f"best: {self.best} tracks the original best (final loss ratio "
                         f"{C.format_number(best.comparison.ratio, '.3f')}, "
                         f"curve gap {C.format_number(best.comparison.curve_gap, '.1%')})"
                         + ("" if best.passed else " but FAILs"))
        if self.workdir:
            lines.append(f"  (run directories and logs kept in {self.workdir})")
        return "\n".join(lines)



def _files_cell(rec: RankRecord, root: str) -> str:
    """Gated files, grouped by directory when there are many."""
    gated = rec.gated_files()
    if not gated:
        return "-"
    if len(gated) <= 3:
        return ", ".join(f"{rel_path(f.path, root)} ({f.kind})" for f in gated)
    groups: dict[tuple[str, str], int] = {}
    for f in gated:
        rel = rel_path(f.path, root)
        parent = os.path.dirname(rel)
        key = ((parent + "/") if parent else rel, f.kind)
        groups[key] = groups.get(key, 0) + 1
    return ", ".join(f"{where} ({n} {kind})" if n > 1 else f"{where} ({kind})" for (where, kind), n in groups.items())


def format_report(report: VerifyReport) -> str:
    lines = []
    how = {"given": "given as already converted", "converted": "converted by tfdist",
           "already-distributed": "already distributed; run as is"}.get(report.conversion_status or "", "")
    engine = report.distributed.backend if report.distributed else HOROVOD
    labels = report.task_labels
    ps = sum(1 for label in labels if label.startswith("ps:"))
    lines.append(f"tfdist verify {report.script}  ({how}; "
                 + (f"parameter servers: a chief, {report.np} workers, {ps} parameter server(s)" if labels else
                    f"{report.np} ranks" + ("; tf-distribute workers, rank 0 = chief" if engine == TF_DISTRIBUTE
                                            else ""))
                 + (f"; --steps {report.steps_cap}" if report.steps_cap else "") + ")")
    header = f"  {'':<22}{'exit':>5}  {'steps':>7}  {'vars':>5}  {'sha256':<12}  {'sum':>14}  files written (checkpoint/summary/model)"
    lines.append(header)

    def row(label, rec: RankRecord, obs: Observation):
        if rec.missing:
            return f"  {label:<22}{'?':>5}  {'':>7}  {'':>5}  {'(no probe record)':<12}"
        if rec.raw.get("exit_how") == "serving":   # a parameter-server cluster's worker or server
            return f"  {label:<22}{'-':>5}  {'':>7}  {rec.trainable_count:>5}  {'(served)':<12}  {'':>14}  " \
                + _files_cell(rec, obs.cwd)
        steps = str(rec.optimizer_steps)
        if rec.cap_applied:
            steps += f"/{rec.planned_steps if rec.planned_steps is not None else '?'}"
        sha = (rec.trainable_sha256 or "")[:12]
        total = f"{rec.trainable_sum:.6g}" if rec.trainable_sum is not None else ""
        return (f"  {label:<22}{rec.exit_code!s:>5}  {steps:>7}  {rec.trainable_count:>5}  {sha:<12}  {total:>14}  "
                + _files_cell(rec, obs.cwd))

    if report.reference:
        for rec in report.reference.ranks[:1]:
            lines.append(row("original (1 process)", rec, report.reference))
    if report.distributed:
        for rec in report.distributed.ranks:
            name = labels[rec.rank] if 0 <= rec.rank < len(labels) else f"rank {rec.rank}"
            lines.append(row(name, rec, report.distributed))
    if any(r.cap_applied for obs in (report.reference, report.distributed) if obs for r in obs.ranks):
        lines.append("  (steps shown as taken/planned: Model.fit was stopped by --steps)")
    if report.comparison is not None:
        lines.extend(C.format_table([report.comparison]))
    for c in report.checks:
        lines.append(f"  ok: {c}")
    for w in report.warnings:
        lines.append(f"  warning: {w}")
    for s in report.skipped:
        lines.append(f"  not checked: {s}")
    if report.passed:
        lines.append("PASS")
    else:
        for obs in (report.reference, report.distributed):
            if obs is None:
                continue
            failed = obs.timed_out or obs.returncode != 0 or any(r.missing or r.exit_code for r in obs.ranks)
            if failed and obs.tail:
                lines.append(f"  --- last lines of the {obs.label} run ---")
                lines.extend("  | " + t for t in obs.tail[-25:])
        for reason in report.reasons:
            lines.append(f"FAIL: {reason}")
        if not report.workdir:
            lines.append("  (rerun with --keep to inspect the run directories and logs)")
    if report.workdir:
        lines.append(f"  (run directories and logs kept in {report.workdir})")
    return "\n".join(lines)
