"""What verify observed: one RankRecord per process (parsed from the probe's
rank-<N>.json), the files it wrote, and the Observation of a whole run.
Plain data; the checks are in verify_checks (their results in verify_results),
the rendering in verify_report."""
from __future__ import annotations

import json
from dataclasses import asdict, dataclass, field
from pathlib import Path

from .probe import GATED_KINDS
from .verify_samples import SampleStream, sample_stream, samples_summary

HOROVOD = "horovod"
TF_DISTRIBUTE = "tf-distribute"
BACKENDS = (HOROVOD, TF_DISTRIBUTE)


@dataclass
class FileWrite:
    path: str
    kind: str           # checkpoint | summary | model | file
    via: list[str] = field(default_factory=list)
    exists_at_exit: bool | None = None      # None: not recorded (older probe)
    multi_worker_temp: bool = False         # inside a tf.distribute workertemp_<N> directory

    @property
    def removed_temp(self) -> bool:
        """Written into tf.distribute's multi-worker temporary directory and
        removed again before the process ended."""
        return self.multi_worker_temp and self.exists_at_exit is False

    @property
    def gated(self) -> bool:
        return self.kind in GATED_KINDS


@dataclass
class RankRecord:
    """What the probe saw in one process."""
    rank: int
    size: int
    exit_code: int | None
    exception: str | None = None
    trainable_count: int = 0
    trainable_sha256: str | None = None
    trainable_sum: float | None = None
    variable_digests: list[tuple[str, str]] = field(default_factory=list)  # (name, digest)
    optimizer_steps: int = 0
    steps_source: str | None = None
    keras_optimizers: list[dict] = field(default_factory=list)
    fit_rates: list = field(default_factory=list)   # per Model.fit: step-0 rates of the optimizers it stepped
    tf1_train_runs: int = 0
    global_step: int | None = None
    files: list[FileWrite] = field(default_factory=list)
    steps_cap: dict = field(default_factory=dict)
    probe_errors: list[str] = field(default_factory=list)
    elapsed_s: float | None = None
    samples: dict = field(default_factory=dict)   # summary: source, rows, distinct, capped
    strategies: list[dict] = field(default_factory=list)   # tf.distribute strategies built
    rank_source: str | None = None
    missing: bool = False          # no record: the process died before writing it
    raw: dict = field(default_factory=dict, repr=False)

    @classmethod
    def from_json(cls, data: dict) -> "RankRecord":
        variables = data.get("variables") or {}
        optimizer = data.get("optimizer") or {}
        return cls(
            rank=int(data.get("rank", 0)),
            size=int(data.get("size", 1) or 1),
            exit_code=data.get("exit_code"),
            exception=data.get("exception"),
            trainable_count=int(variables.get("trainable_count", 0) or 0),
            trainable_sha256=variables.get("trainable_sha256"),
            trainable_sum=variables.get("trainable_sum"),
            variable_digests=[(v.get("name", "?"), v.get("digest", "")) for v in variables.get("trainable", [])],
            optimizer_steps=int(optimizer.get("steps", 0) or 0),
            steps_source=optimizer.get("source"),
            keras_optimizers=list(optimizer.get("keras", [])),
            fit_rates=list(optimizer.get("fit_rates") or []),
            tf1_train_runs=int(optimizer.get("tf1_train_runs", 0) or 0),
            global_step=optimizer.get("global_step"),
            files=[FileWrite(f["path"], f.get("kind", "file"), list(f.get("via", [])), f.get("exists_at_exit"),
                             bool(f.get("multi_worker_temp"))) for f in data.get("files", [])],
            steps_cap=dict(data.get("steps_cap") or {}),
            probe_errors=list(data.get("probe_errors", [])),
            elapsed_s=data.get("elapsed_s"),
            samples=samples_summary(data.get("samples")),
            strategies=list(data.get("strategies") or []),
            rank_source=data.get("rank_source"),
            raw=data,
        )

    def sample_stream(self) -> SampleStream | None:
        """The training samples this process consumed (see sample_stream())."""
        return sample_stream(self.raw.get("samples"))

    @classmethod
    def missing_rank(cls, rank: int, size: int) -> "RankRecord":
        return cls(rank=rank, size=size, exit_code=None, missing=True)

    @property
    def planned_steps(self) -> int | None:
        return self.steps_cap.get("planned_steps")

    @property
    def cap_applied(self) -> bool:
        return bool(self.steps_cap.get("applied"))

    def gated_files(self) -> list[FileWrite]:
        return [f for f in self.files if f.gated]

    @property
    def multi_worker_size(self) -> int | None:
        """The most workers any tf.distribute strategy of this process spans
        (None: it built no strategy)."""
        sizes = [int(s.get("num_workers") or 1) for s in self.strategies]
        return max(sizes) if sizes else None

    @property
    def replicas_in_sync(self) -> int | None:
        """The most replicas any tf.distribute strategy of this process runs."""
        sizes = [int(s.get("num_replicas_in_sync") or 1) for s in self.strategies]
        return max(sizes) if sizes else None

    @property
    def replica_copies(self) -> dict:
        """{checked, differing}: this process's per-device copies of its
        trainable tf.distribute variables (several local devices)."""
        return dict(self.raw.get("replica_copies") or {"checked": 0, "differing": []})

    @property
    def samples_skipped(self) -> list[str]:
        return list((self.raw.get("samples") or {}).get("skipped") or [])

    def to_dict(self) -> dict:
        d = asdict(self)
        d.pop("raw", None)
        return d


@dataclass
class Observation:
    """One probed run (single process, or all ranks of a horovodrun job)."""
    label: str
    np: int
    cwd: str
    ranks: list[RankRecord]
    returncode: int
    timed_out: bool
    duration_s: float
    command: list[str]
    tail: list[str] = field(default_factory=list)
    log_path: str | None = None
    backend: str = HOROVOD

    @property
    def records(self) -> list[RankRecord]:
        return self.ranks

    def to_dict(self) -> dict:
        return {
            "label": self.label, "np": self.np, "cwd": self.cwd, "returncode": self.returncode,
            "timed_out": self.timed_out, "duration_s": round(self.duration_s, 2), "command": self.command,
            "log": self.log_path, "backend": self.backend, "ranks": [r.to_dict() for r in self.ranks],
        }


def read_records(probe_dir: Path, np: int) -> list[RankRecord]:
    by_rank: dict[int, RankRecord] = {}
    extra: list[RankRecord] = []
    for path in sorted(probe_dir.glob("rank-*.json")):
        try:
            rec = RankRecord.from_json(json.loads(path.read_text(encoding="utf-8")))
        except (OSError, ValueError) as exc:
            rec = RankRecord.missing_rank(-1, np)
            rec.probe_errors.append(f"unreadable record {path.name}: {exc}")
        if rec.rank in by_rank or rec.rank < 0:
            extra.append(rec)
        else:
            by_rank[rec.rank] = rec
    out = [by_rank.get(r) or RankRecord.missing_rank(r, np) for r in range(np)]
    out.extend(by_rank[r] for r in sorted(by_rank) if r >= np)
    out.extend(extra)
    return out
