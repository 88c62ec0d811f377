"""Run a script single-process and its distributed version on N processes
under the probe, then check that the ranks trained correctly.

Two engines: ``backend="horovod"`` (the ranks run under horovodrun) and
``backend="tf-distribute"`` (N TF_CONFIG workers started by
launcher.execute_workers; the rank is the worker's task index, worker 0 the
chief).

Reusable from tests::

    from tfdist.runtime.verify import verify_script, run_and_observe
    report = verify_script("examples/mnist.py", np=2)
    assert report.passed, report.format_text()
"""
from __future__ import annotations

import json
import math
import os
import shutil
import sys
import tempfile
from dataclasses import asdict, dataclass, field
from pathlib import Path
from typing import Callable, Sequence

from . import compare as C
from . import launcher
from .probe import (ADDED_PATH_ENV, GATED_KINDS, LOCAL_DEVICES_ENV, LOSSES_ENV, MAX_STEPS_ENV, ORIG_PYTHONPATH_ENV,
                    PROBE_DIR_ENV, SEED_ENV)

HOROVOD = "horovod"
TF_DISTRIBUTE = "tf-distribute"
BACKENDS = (HOROVOD, TF_DISTRIBUTE)

#: Allowed deviation of a rank's optimizer steps from reference/N: the larger
#: of this fraction of the expectation and STEP_TOLERANCE_ABS steps.
STEP_TOLERANCE_REL = 0.2
STEP_TOLERANCE_ABS = 1
DEFAULT_TIMEOUT = 600.0


class VerifyInputError(Exception):
    """Bad input for verify (missing script, conversion impossible): exit 3."""


# --------------------------------------------------------------------------
# Records
# --------------------------------------------------------------------------

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
            tf1_train_runs=int(optimizer.get("tf1_train_runs", 0) or 0),
            global_step=optimizer.get("global_step"),
            files=[FileWrite(f["path"], f.get("kind", "file"), list(f.get("via", [])), f.get("exists_at_exit"),
                             bool(f.get("multi_worker_temp"))) for f in data.get("files", [])],
            steps_cap=dict(data.get("steps_cap") or {}),
            probe_errors=list(data.get("probe_errors", [])),
            elapsed_s=data.get("elapsed_s"),
            samples=_samples_summary(data.get("samples")),
            strategies=list(data.get("strategies") or []),
            rank_source=data.get("rank_source"),
            raw=data,
        )

    def sample_stream(self) -> "SampleStream | None":
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


def _read_records(probe_dir: Path, np: int) -> list[RankRecord]:
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


#: the seed a comparison gives both runs (+ the rank): any fixed value does.
COMPARE_SEED = 1234


def run_and_observe(script: str | os.PathLike, np: int, cwd: str | os.PathLike, timeout: float | None = DEFAULT_TIMEOUT,
                    args: Sequence[str] = (), *, single: bool | None = None, as_file: str | os.PathLike | None = None,
                    steps_cap: int | None = None, probe_dir: str | os.PathLike | None = None,
                    log_path: str | os.PathLike | None = None, sink: Callable[[str], None] | None = None,
                    env: dict | None = None, horovodrun: str | None = None, label: str | None = None,
                    pythonpath: Sequence[str | os.PathLike] = (), backend: str = HOROVOD,
                    python: str | None = None, record_losses: bool = False, local_devices: int = 1,
                    seed: int | None = None) -> Observation:
    """Run ``script`` under the probe and collect one RankRecord per rank.

    ``single`` (default: np == 1) runs plain ``python`` (one process, rank 0 of
    1, Horovod launcher variables and TF_CONFIG removed from the environment);
    otherwise ``horovodrun -np N -H localhost:N --gloo python -m
    tfdist.runtime.probe`` (``backend="horovod"``) or N such processes on
    localhost, each with its TF_CONFIG (``backend="tf-distribute"``).
    ``python``: the interpreter (default: the one horovodrun belongs to for
    Horovod, sys.executable for tf-distribute).
    ``cwd`` is created if needed and used as every process's working
    directory.  ``steps_cap`` sets TFDIST_PROBE_MAX_STEPS for each process.
    ``env`` replaces os.environ as the base environment; ``pythonpath``
    entries go first on the script's PYTHONPATH (and stay visible to it, unlike
    tfdist's own entry): e.g. a directory whose sitecustomize.py installs
    stand-in modules (tests/slow/support/mnist_standin).
    ``record_losses`` makes the probe record the training loss (verify --compare),
    and seeds the script's generators with ``seed`` (default COMPARE_SEED) +
    its rank, so the original and rank 0 start from the same weights (the
    probe's SEED_ENV says why).
    ``local_devices`` > 1 presents each process's CPU as that many logical
    devices (the probe's TFDIST_PROBE_LOCAL_DEVICES).
    Raises launcher.RuntimeMissing when horovodrun is needed and not found.
    """
    if backend not in BACKENDS:
        raise ValueError(f"unknown backend {backend!r} (available: {', '.join(BACKENDS)})")
    script = os.path.abspath(os.fspath(script))
    cwd = Path(cwd).resolve()
    cwd.mkdir(parents=True, exist_ok=True)
    single = (np == 1) if single is None else single
    if single and np != 1:
        raise ValueError("single-process runs have np == 1")
    own_probe_dir = probe_dir is None
    probe_path = Path(probe_dir) if probe_dir is not None else Path(tempfile.mkdtemp(prefix="tfdist-probe-"))
    probe_path.mkdir(parents=True, exist_ok=True)
    for old in probe_path.glob("rank-*.json"):
        old.unlink()

    base_env = dict(os.environ if env is None else env)
    if pythonpath:
        entries = [os.path.abspath(os.fspath(p)) for p in pythonpath]
        if base_env.get("PYTHONPATH"):
            entries.append(base_env["PYTHONPATH"])
        base_env["PYTHONPATH"] = os.pathsep.join(entries)
    src = launcher.tfdist_pythonpath()
    run_env = launcher.with_pythonpath(base_env, [src])
    run_env[ADDED_PATH_ENV] = src
    run_env[ORIG_PYTHONPATH_ENV] = base_env.get("PYTHONPATH", "")
    run_env[PROBE_DIR_ENV] = str(probe_path)
    run_env.setdefault("PYTHONUNBUFFERED", "1")
    if steps_cap:
        run_env[MAX_STEPS_ENV] = str(int(steps_cap))
    else:
        run_env.pop(MAX_STEPS_ENV, None)
    if record_losses:
        run_env[LOSSES_ENV] = "1"
        run_env[SEED_ENV] = str(COMPARE_SEED if seed is None else int(seed))
    else:
        run_env.pop(LOSSES_ENV, None)
        run_env.pop(SEED_ENV, None)
    if local_devices > 1:
        run_env[LOCAL_DEVICES_ENV] = str(int(local_devices))
    else:
        run_env.pop(LOCAL_DEVICES_ENV, None)

    probe_cmd = ["-m", "tfdist.runtime.probe"]
    if as_file is not None:
        probe_cmd += ["--as-file", os.path.abspath(os.fspath(as_file))]
    probe_cmd += [script, *args]
    workers = None
    if backend == TF_DISTRIBUTE:
        python = python or sys.executable
        run_env = launcher.single_process_env(run_env)     # no stray TF_CONFIG / Horovod variables
        if single:
            command = [python, *probe_cmd]
        else:
            workers = launcher.tf_distribute_workers(np)
            command = [python, *probe_cmd]
    elif single:
        hvdrun = horovodrun or launcher.find_horovodrun()
        python = python or (launcher.python_for(hvdrun) if hvdrun else sys.executable)
        command = [python, *probe_cmd]
        run_env = launcher.single_process_env(run_env)
    else:
        hvdrun = horovodrun or launcher.find_horovodrun()
        if hvdrun is None:
            raise launcher.RuntimeMissing()
        command = launcher.horovodrun_command(np, [python or launcher.python_for(hvdrun), *probe_cmd],
                                              horovodrun=hvdrun)
    try:
        if workers is not None:
            result = launcher.execute_workers(workers, command, timeout=timeout, env=run_env, cwd=cwd, sink=sink,
                                              log_path=log_path)
        else:
            result = launcher.execute(command, timeout=timeout, env=run_env, cwd=cwd, sink=sink,
                                      log_path=log_path)
        ranks = _read_records(probe_path, np)
    finally:
        if own_probe_dir:
            shutil.rmtree(probe_path, ignore_errors=True)
    what = "workers" if backend == TF_DISTRIBUTE else "ranks"
    return Observation(label=label or ("single process" if single else f"{np} {what}"), np=np, cwd=str(cwd),
                       ranks=ranks, returncode=result.returncode, timed_out=result.timed_out,
                       duration_s=result.duration_s, command=result.command, tail=result.tail,
                       log_path=os.fspath(log_path) if log_path else None, backend=backend)


# --------------------------------------------------------------------------
# Samples
# --------------------------------------------------------------------------

#: Order in which the probe's sample sources are trusted as "what was trained
#: on": TF1 feeds of train-op runs are training steps by construction; eager
#: iterator batches and eager GradientTape batches (the first model input and
#: the first loss's y_true in a tape) count when an optimizer step followed
#: them; Keras fit's NumPy rows are what fit was given (x epochs).
SAMPLE_SOURCES = ("tf1-feed", "iterator", "tape", "keras-fit")
#: Sources whose batches count only when marked ``trained`` by the probe.
STEP_FOLLOWED_SOURCES = ("iterator", "tape")


@dataclass
class SampleStream:
    """Rows a process trained on, in order: (sample hash, label hashes)."""
    source: str
    rows: list[tuple[str, tuple[str, ...]]]
    capped: bool = False

    @property
    def samples(self) -> list[str]:
        return [s for s, _ in self.rows]

    def distinct(self) -> set[str]:
        return {s for s, _ in self.rows}


def _split_row(row) -> tuple[str, tuple[str, ...]]:
    parts = row.split(":") if isinstance(row, str) else list(row)
    return parts[0], tuple(parts[1:])


def sample_stream(samples: dict | None) -> SampleStream | None:
    """The training stream of one probe record's ``samples``: the first
    source in SAMPLE_SOURCES that recorded rows (iterator and tape batches
    only when an optimizer step followed them; keras-fit rows repeated per
    epoch)."""
    if not samples:
        return None
    batches = samples.get("batches") or []
    capped = bool(samples.get("capped"))
    for source in SAMPLE_SOURCES:
        chosen = [b for b in batches if b.get("source") == source]
        if source in STEP_FOLLOWED_SOURCES:
            chosen = [b for b in chosen if b.get("trained")]
        if not chosen:
            continue
        rows: list[tuple[str, tuple[str, ...]]] = []
        for b in chosen:
            batch_rows = [_split_row(r) for r in b.get("rows", [])]
            repeat = int(b.get("epochs", 1) or 0) if source == "keras-fit" else 1
            for _ in range(repeat):
                rows.extend(batch_rows)
        return SampleStream(source, rows, capped)
    return None


def _samples_summary(samples: dict | None) -> dict:
    stream = sample_stream(samples)
    if stream is None:
        return {}
    return {"source": stream.source, "rows": len(stream.rows), "distinct": len(stream.distinct()),
            "capped": stream.capped}


def check_samples(ref: "RankRecord", ranks: list["RankRecord"], np: int) -> dict:
    """Sample checks, when the original and the ranks recorded samples.

    * pairs intact: every (sample, labels) row a rank consumed, whose sample
      the original also fed, carries labels the original fed with it;
    * divided: the ranks did not all consume the identical sequence;
      reported: distinct samples per rank, the overlap between ranks within
      their first epoch (the first len(original's distinct samples)/N rows of
      each), and how much of the original's samples the ranks covered.

    Returns {"reasons", "checks", "warnings", "summary", "identical"}."""
    out = {"reasons": [], "checks": [], "warnings": [], "summary": None, "identical": False}
    ref_stream = None if ref.missing else ref.sample_stream()
    streams = {r.rank: r.sample_stream() for r in ranks if not r.missing}
    if ref_stream is None and not any(streams.values()):
        return out
    if ref_stream is None or not streams or not all(streams.values()):
        have = (["the original"] if ref_stream else []) + [f"rank {k}" for k, v in sorted(streams.items()) if v]
        out["warnings"].append("samples not checked: only " + (", ".join(have) or "no run")
                               + " recorded the samples it trained on")
        return out
    sources = {ref_stream.source} | {st.source for st in streams.values()}
    if len(sources) > 1:
        out["warnings"].append("samples not checked: the runs recorded different sources ("
                               + f"original: {ref_stream.source}; "
                               + ", ".join(f"rank {k}: {v.source}" for k, v in sorted(streams.items())) + ")")
        return out

    ref_pairs: dict[str, set] = {}
    for sample, labels in ref_stream.rows:
        ref_pairs.setdefault(sample, set()).add(labels)
    ref_distinct = set(ref_pairs)
    has_labels = any(labels for _, labels in ref_stream.rows)
    summary = {"source": ref_stream.source, "original": {"rows": len(ref_stream.rows), "distinct": len(ref_distinct),
                                                          "capped": ref_stream.capped}, "ranks": {}}

    # pairs intact
    broken, unknown_only, per_rank_seen = [], [], []
    for rank, st in sorted(streams.items()):
        seen = st.distinct() & ref_distinct
        bad = {s for s, labels in st.rows if s in ref_pairs and labels not in ref_pairs[s]}
        unknown = len(st.distinct() - ref_distinct)
        summary["ranks"][rank] = {"rows": len(st.rows), "distinct": len(st.distinct()), "known": len(seen),
                                  "unknown": unknown, "mispaired": len(bad), "capped": st.capped}
        per_rank_seen.append(f"rank {rank}: {len(seen)}")
        if bad:
            broken.append(f"rank {rank} fed {len(bad)} of {len(seen)} samples with labels that are not theirs")
        if not seen:
            unknown_only.append(rank)
        elif unknown:
            out["warnings"].append(f"rank {rank} fed {unknown} sample(s) the original never fed "
                                   "(random augmentation? different data?)")
    if unknown_only:
        out["warnings"].append("samples of " + ", ".join(f"rank {r}" for r in unknown_only)
                               + " never appeared in the original run: sample/label pairs not checked for them")
    if broken:
        out["reasons"].append("sample/label pairs broken: " + "; ".join(broken)
                              + " (the original fed those samples with other labels: were the labels "
                              "sliced or reordered differently from the samples?)")
    elif has_labels and len(unknown_only) < len(streams):
        out["checks"].append("sample/label pairs intact: every sample a rank fed carried the labels the "
                             f"original fed it with ({', '.join(per_rank_seen)} samples checked)")

    # divided
    sequences = [st.samples for _, st in sorted(streams.items())]
    if np > 1 and len(sequences) > 1 and sequences[0] and all(seq == sequences[0] for seq in sequences[1:]):
        out["identical"] = True
        out["reasons"].append(f"work not divided: every rank consumed the identical sequence of "
                              f"{len(sequences[0])} samples (data not sharded by rank?)")
    window = max(1, len(ref_distinct) // max(1, np))
    firsts = {rank: set(st.samples[:window]) for rank, st in sorted(streams.items())}
    counts: dict[str, int] = {}
    for first in firsts.values():
        for sample in first:
            counts[sample] = counts.get(sample, 0) + 1
    overlap = sum(1 for c in counts.values() if c > 1)
    union: set[str] = set()
    for st in streams.values():
        union |= st.distinct()
    covered = len(union & ref_distinct)
    coverage = covered / len(ref_distinct) if ref_distinct else 0.0
    summary.update({"first_epoch_window": window, "first_epoch_overlap": overlap,
                    "covered": covered, "coverage": round(coverage, 4)})
    per_rank = ", ".join(f"rank {r}: {len(st.distinct())}" for r, st in sorted(streams.items()))
    text = (f"distinct samples per rank ({per_rank}); {overlap} sample(s) shared between ranks within the first "
            f"epoch ({window} per rank); the ranks together covered {coverage:.1%} of the original's "
            f"{len(ref_distinct)} samples")
    if not out["identical"]:
        out["checks"].append(f"work divided ({ref_stream.source}): " + text)
        if np > 1 and overlap:
            out["warnings"].append(f"{overlap} sample(s) were read by more than one rank within the first epoch "
                                   "(each rank shuffles the whole dataset instead of reading its own shard?)")
        if coverage < 0.9:
            out["warnings"].append(f"the ranks together covered only {coverage:.1%} of the original's samples")
    else:
        out["reasons"][-1] += "; " + text
    if ref_stream.capped or any(st.capped for st in streams.values()):
        out["warnings"].append("sample recording was capped (TFDIST_PROBE_SAMPLE_ROWS): checks use the first rows only")
    out["summary"] = summary
    return out


# --------------------------------------------------------------------------
# Checks
# --------------------------------------------------------------------------

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
        }

    def format_text(self) -> str:
        return format_report(self)


def expected_steps(reference_steps: int, np: int) -> tuple[float, float]:
    """(expected steps per rank, allowed deviation)."""
    expected = reference_steps / np
    return expected, max(STEP_TOLERANCE_ABS, STEP_TOLERANCE_REL * expected)


def _rel(path: str, root: str | None) -> str:
    if root:
        try:
            rel = os.path.relpath(path, root)
            if not rel.startswith(".."):
                return rel
        except ValueError:
            pass
    return path


def _brief(text: str, limit: int = 160) -> str:
    first = text.strip().splitlines()[0] if text.strip() else ""
    return first if len(first) <= limit else first[: limit - 3] + "..."


def _short_list(items: list[str], limit: int = 4) -> str:
    shown = ", ".join(items[:limit])
    return shown + (f", ... (+{len(items) - limit} more)" if len(items) > limit else "")


def check(reference: Observation, distributed: Observation, np: int, steps_cap: int | None = None,
          samples_out: dict | None = None, backend: str | None = None,
          local_devices: int = 1) -> tuple[list[str], list[str], list[str]]:
    """Return (failure reasons, established checks, warnings).  ``samples_out``
    (a dict) receives the sample summary (see check_samples).  ``backend``
    defaults to the distributed observation's.  ``local_devices``: devices
    each process replicates over (tf-distribute, verify --local-devices): the
    steps are then 1/(np x local_devices) of the original's, and each
    process's copies of a variable must be identical."""
    backend = backend or distributed.backend
    tfd = backend == TF_DISTRIBUTE
    reasons: list[str] = []
    checks: list[str] = []
    warnings: list[str] = []
    ref = reference.ranks[0] if reference.ranks else RankRecord.missing_rank(0, 1)
    ranks = distributed.ranks[:np]
    strays = distributed.ranks[np:]

    # 1. exit status -------------------------------------------------------
    if reference.timed_out:
        reasons.append(f"the original script timed out single-process after {reference.duration_s:.0f}s")
    elif ref.missing:
        reasons.append(f"the original script left no probe record single-process (exit {reference.returncode})")
    elif ref.exit_code != 0:
        reasons.append(f"the original script failed single-process (exit {ref.exit_code}"
                       + (f": {_brief(ref.exception)}" if ref.exception else "") + ")")
    if distributed.timed_out:
        reasons.append(f"the distributed run timed out after {distributed.duration_s:.0f}s and was killed")
    bad = []
    for r in ranks:
        if r.missing:
            bad.append(f"rank {r.rank} left no probe record (killed or crashed hard)")
        elif r.exit_code != 0:
            bad.append(f"rank {r.rank} exited {r.exit_code}" + (f" ({_brief(r.exception)})" if r.exception else ""))
    if bad:
        reasons.append("; ".join(bad))
    elif distributed.returncode != 0 and not distributed.timed_out:
        if tfd:
            reasons.append(f"a worker process exited {distributed.returncode} although every worker's script "
                           "returned 0 (crash at exit?)")
        else:
            reasons.append(f"horovodrun exited {distributed.returncode} although every rank's script returned 0")
    else:
        checks.append(f"all {np} {'workers' if tfd else 'ranks'} exited 0")
    if strays:
        warnings.append(f"{len(strays)} extra probe record(s) (processes started by the script?)")
    if tfd:
        spans = {r.rank: r.multi_worker_size for r in ranks if not r.missing and r.exit_code == 0}
        off = {k: v for k, v in spans.items() if v != np}
        if off:
            detail = ", ".join(f"rank {k}: " + ("no tf.distribute strategy" if v is None else f"{v} worker(s)")
                               for k, v in sorted(off.items()))
            reasons.append(f"the workers did not build a tf.distribute strategy spanning all {np} workers ({detail}); "
                           "does the script create a MultiWorkerMirroredStrategy when TF_CONFIG is set?")
        elif spans:
            classes = sorted({s.get("class", "?") for r in ranks if not r.missing for s in r.strategies
                              if int(s.get("num_workers") or 1) == np})
            checks.append(f"every worker built a {'/'.join(classes)} spanning the {np} workers")
        if local_devices > 1:
            _check_local_replicas([r for r in ranks if not r.missing and r.exit_code == 0], np * local_devices,
                                  reasons, checks)
    else:
        sizes = {r.size for r in ranks if not r.missing}
        if sizes and sizes != {np}:
            reasons.append(f"ranks report world size {sorted(sizes)}, expected {np} (did the script call hvd.init()?)")

    present = [r for r in ranks if not r.missing]

    # 2. identical trainable variables ------------------------------------
    if present:
        counts = {r.trainable_count for r in present}
        hashes = {r.trainable_sha256 for r in present}
        if counts == {0}:
            reasons.append("no trainable variables were observed on any rank")
        elif len(counts) > 1:
            reasons.append("ranks hold different numbers of trainable variables: "
                           + ", ".join(f"rank {r.rank}: {r.trainable_count}" for r in present))
        elif len(hashes) > 1:
            base = present[0]
            detail = []
            for other in present[1:]:
                if other.trainable_sha256 == base.trainable_sha256:
                    continue
                diff = [name for (name, d0), (_, d1) in zip(base.variable_digests, other.variable_digests) if d0 != d1]
                detail.append(f"rank {other.rank} differs from rank {base.rank} in {len(diff)} of "
                              f"{base.trainable_count} variables (first: {diff[0] if diff else '?'})")
            reasons.append("final trainable variables differ between ranks (not bitwise identical; "
                           "missing initial broadcast or gradient averaging?): " + "; ".join(detail))
        else:
            checks.append(f"all ranks hold bitwise-identical trainable variables "
                          f"({present[0].trainable_count} variables, sha256 {present[0].trainable_sha256[:12]})")
        if not ref.missing and ref.trainable_count and counts and ref.trainable_count not in counts:
            warnings.append(f"the original has {ref.trainable_count} trainable variables, the ranks "
                            f"{sorted(counts)}")

    # 3. optimizer steps ~ reference / N --------------------------------
    steps_not_sharded = None
    use_planned = bool(steps_cap) and (ref.cap_applied or any(r.cap_applied for r in present))
    if steps_cap and not use_planned:
        warnings.append(f"--steps {steps_cap} had no effect: no Keras Model.fit loop reached the cap, "
                        "the scripts ran to completion")
    if present and not ref.missing:
        if use_planned:
            what = "planned optimizer steps (Model.fit, before the --steps cap)"
            ref_steps = ref.planned_steps
            rank_steps = {r.rank: r.planned_steps for r in present}
        else:
            what = "optimizer steps"
            ref_steps = ref.optimizer_steps
            rank_steps = {r.rank: r.optimizer_steps for r in present}
        if ref_steps is None or any(v is None for v in rank_steps.values()):
            reasons.append(f"cannot check the 1/{np} split of {what}: unknown for "
                           + ("the original" if ref_steps is None else "some ranks")
                           + " (dataset of unknown length?); rerun without --steps")
        elif not ref_steps:
            reasons.append("the original script took no optimizer steps that tfdist could observe "
                           "(no Keras optimizer iterations, TF1 train op or global step)")
        else:
            expected, tol = expected_steps(ref_steps, np * local_devices)
            off = {r: s for r, s in rank_steps.items() if abs(s - expected) > tol}
            per_rank = ", ".join(f"rank {r}: {s}" for r, s in sorted(rank_steps.items()))
            if off:
                hint = ""
                if all(s >= ref_steps - tol for s in off.values()):
                    if tfd:
                        hint = (" - every rank went through the whole dataset (data not sharded: dataset not "
                                "distributed by the strategy, or auto-sharding switched off?)")
                    else:
                        hint = " - every rank went through the whole dataset (data not sharded / steps not divided by hvd.size()?)"
                    steps_not_sharded = len(reasons)
                reasons.append(f"{what} per rank are not ~1/{np * local_devices} of the original's {ref_steps} "
                               f"(expected {expected:g} +/- {tol:g}; {per_rank}){hint}")
            else:
                checks.append(f"each rank took ~1/{np * local_devices} of the original's {ref_steps} {what} ({per_rank})")

    # 4. samples: pairs intact, work divided --------------------------------
    sampled = check_samples(ref, present, np)
    skipped = sorted({note for r in [ref, *present] if not r.missing for note in r.samples_skipped})
    if skipped and sampled["summary"] is None:
        sampled["warnings"].append("samples the probe could not attribute to a rank were not recorded: "
                                   + "; ".join(skipped))
    elif tfd and sampled["summary"] is None and not sampled["warnings"]:
        sampled["warnings"].append("samples not checked: no run recorded the samples it trained on (the probe "
                                   "sees eager iteration only; Model.fit on a dataset iterates inside a tf.function)")
    sample_reasons = list(sampled["reasons"])
    if sampled["identical"] and steps_not_sharded is not None:
        # Same cause as the steps reason: say so there instead of twice.
        evidence = sample_reasons.pop()
        reasons[steps_not_sharded] += "; the samples confirm it: " + evidence.split(": ", 1)[1]
    reasons.extend(sample_reasons)
    checks.extend(sampled["checks"])
    warnings.extend(sampled["warnings"])
    if samples_out is not None and sampled["summary"] is not None:
        samples_out.update(sampled["summary"])

    # 5. only rank 0 writes checkpoints / summaries / models ----------------
    if tfd:
        _check_writers_tf_distribute(present, distributed, reasons, checks)
    else:
        offenders = []
        for r in present:
            if r.rank == 0:
                continue
            gated = r.gated_files()
            if gated:
                kinds = sorted({f.kind for f in gated})
                offenders.append(f"rank {r.rank} wrote {'/'.join(kinds)} files: "
                                 + _short_list([_rel(f.path, distributed.cwd) for f in gated]))
        if offenders:
            reasons.append("only rank 0 may write checkpoints/summaries/models; " + "; ".join(offenders))
        elif present:
            r0 = next((r for r in present if r.rank == 0), None)
            n0 = len(r0.gated_files()) if r0 else 0
            checks.append(f"only rank 0 wrote checkpoint/summary/model files ({n0} path(s))")
    by_path: dict[str, list[int]] = {}
    for r in present:
        for f in r.files:
            if not f.gated:
                by_path.setdefault(f.path, []).append(r.rank)
    shared = [p for p, rs in by_path.items() if len(rs) > 1]
    if shared:
        warnings.append("several ranks wrote the same file(s): "
                        + _short_list([_rel(p, distributed.cwd) for p in shared]))
    if not ref.missing:
        ref_kinds = {f.kind for f in ref.gated_files()}
        r0 = next((r for r in present if r.rank == 0), None)
        if r0 is not None:
            lost = ref_kinds - {f.kind for f in r0.gated_files()}
            if lost:
                warnings.append(f"the original wrote {'/'.join(sorted(lost))} files but rank 0 of the "
                                "distributed run did not")
    for r in [ref, *present]:
        for err in r.probe_errors[:3]:
            warnings.append(f"probe ({'original' if r is ref else f'rank {r.rank}'}): {err}")
    return reasons, checks, warnings


def _check_local_replicas(present: list[RankRecord], replicas: int, reasons: list[str], checks: list[str]) -> None:
    """Several devices per process: the script's strategy must run on all of
    them, and each process's per-device copies must have stayed identical."""
    off = {r.rank: r.replicas_in_sync for r in present if r.replicas_in_sync != replicas}
    if off:
        reasons.append(f"the strategy does not replicate over all {replicas} devices ("
                       + ", ".join(f"rank {k}: {v or 'no strategy'}" for k, v in sorted(off.items()))
                       + "); does the script build MirroredStrategy() over every local device?")
        return
    differing = {r.rank: r.replica_copies.get("differing") or [] for r in present}
    differing = {k: v for k, v in differing.items() if v}
    checked = sum(int(r.replica_copies.get("checked") or 0) for r in present)
    if differing:
        reasons.append("the replicas' copies of trainable variables differ within a process (gradients not "
                       "all-reduced across devices?): " + "; ".join(f"rank {k}: {_short_list(v)}"
                                                                     for k, v in sorted(differing.items())))
    elif not checked:
        reasons.append(f"no trainable variable replicated over the {replicas} devices was observed "
                       "(variables created outside strategy.scope()?)")
    else:
        checks.append(f"the strategy runs {replicas} replicas; their copies of {checked} trainable variable(s) "
                      "are bitwise identical")


def _check_writers_tf_distribute(present: list[RankRecord], distributed: Observation, reasons: list[str],
                                 checks: list[str]) -> None:
    """The multi-worker rule: every worker may save (saving can run collective
    operations), but only the chief (worker 0) at the user's paths; the others
    write into temporary directories they remove.  Paths in the system's
    temporary directory are not recorded by the probe at all; files in
    TensorFlow's own ``workertemp_<N>`` directories (inside the user's
    directory) are allowed when they were removed again."""
    offenders, leftovers, temp_notes = [], [], []
    for r in present:
        if r.rank == 0:
            continue
        gated = r.gated_files()
        at_user = [f for f in gated if not f.multi_worker_temp]
        kept = [f for f in gated if f.multi_worker_temp and not f.removed_temp]
        removed = [f for f in gated if f.removed_temp]
        if at_user:
            kinds = sorted({f.kind for f in at_user})
            offenders.append(f"rank {r.rank} wrote {'/'.join(kinds)} files: "
                             + _short_list([_rel(f.path, distributed.cwd) for f in at_user]))
        if kept:
            leftovers.append(f"rank {r.rank} left " + _short_list([_rel(f.path, distributed.cwd) for f in kept]))
        if removed:
            temp_notes.append(f"rank {r.rank}: {len(removed)}")
    if offenders:
        reasons.append("only the chief (rank 0) may write checkpoints/summaries/models at the user's paths "
                       "(the other workers must save into temporary directories); " + "; ".join(offenders))
    if leftovers:
        reasons.append("multi-worker temporary files were not removed: " + "; ".join(leftovers))
    if present and not offenders and not leftovers:
        r0 = next((r for r in present if r.rank == 0), None)
        n0 = len([f for f in r0.gated_files() if not f.multi_worker_temp]) if r0 else 0
        text = f"only the chief (rank 0) wrote checkpoint/summary/model files at the user's paths ({n0} path(s))"
        if temp_notes:
            text += ("; the other workers' saves went to multi-worker temporary directories they removed ("
                     + ", ".join(temp_notes) + " path(s))")
        checks.append(text)


# --------------------------------------------------------------------------
# verify_script
# --------------------------------------------------------------------------

#: --lr-scaling / --warmup-epochs as conversion options (tfdist.assembly pipeline keys).
POLICY_OPTIONS = {"linear": (), "sqrt": ("lr-sqrt",), "none": ("lr-none",)}
#: What --sweep tries by default; a warmup policy is added when the converter has it.
DEFAULT_SWEEP = ("linear", "sqrt", "none")
DEFAULT_SWEEP_WARMUP = "linear:warmup=1"


def policy_options(spec: str, steps_per_epoch: int | None = None) -> tuple[str, ...]:
    """``linear`` / ``sqrt`` / ``none``, optionally ``:warmup=K``, as conversion
    options; a warmup counts its epochs in ``steps_per_epoch`` original steps
    when given (--steps-per-epoch).  Raises VerifyInputError."""
    scaling, _, rest = spec.partition(":")
    if scaling not in POLICY_OPTIONS:
        raise VerifyInputError(f"unknown learning-rate policy {spec!r}: use linear, sqrt or none, "
                               "optionally with :warmup=K (e.g. linear:warmup=1)")
    options = POLICY_OPTIONS[scaling]
    if rest:
        key, _, value = rest.partition("=")
        if key != "warmup" or not value.isdigit() or int(value) < 1:
            raise VerifyInputError(f"bad policy {spec!r}: after ':' only warmup=K (K >= 1 epochs)")
        options += (f"warmup-{int(value)}",)
        if steps_per_epoch:
            options += (f"steps-{int(steps_per_epoch)}",)
    return options


def convert_to(script: Path, dest_dir: Path, backend: str = HOROVOD, options: Sequence[str] = ()) -> tuple[Path, str]:
    """Convert ``script`` with tfdist.api.convert_file into ``dest_dir``, with
    conversion options (``lr-sqrt``, ``warmup-2``...).
    Returns (converted path, status).  Raises VerifyInputError."""
    try:
        from tfdist.api import convert_file
        from tfdist.assembly import pipeline_key
    except ImportError as exc:  # pragma: no cover - depends on the checkout
        raise VerifyInputError(f"the tfdist converter is not available ({exc}); pass --converted") from exc
    key = pipeline_key(backend, *options)
    try:
        from tfdist.assembly import pipeline
        pipeline(key)
    except ValueError as exc:    # a backend or option this checkout's converter does not have
        what = f"--backend {backend}" + (f" with {', '.join(options)}" if options else "")
        raise VerifyInputError(f"{script}: cannot convert with {what} ({exc}); "
                               "pass --converted to verify a script that is already distributed") from exc
    result = convert_file(script, backend=key)
    status = result.status
    if status in ("unsupported", "error"):
        raise VerifyInputError(f"{script}: cannot convert ({status}): {result.error or 'see tfdist convert'}")
    if status == "unchanged":
        raise VerifyInputError(f"{script}: nothing to convert (no training loop found); "
                               "pass --converted to verify a script that is already distributed")
    if status == "already-distributed":
        return script, status
    dest_dir.mkdir(parents=True, exist_ok=True)
    dest = dest_dir / script.name
    data = getattr(result, "data", None)
    if data is None:
        data = (result.code or "").encode("utf-8")
    dest.write_bytes(data)
    return dest, status


def converter_accepts(backend: str, options: Sequence[str]) -> bool:
    try:
        from tfdist.assembly import pipeline, pipeline_key
        pipeline(pipeline_key(backend, *options))
        return True
    except (ImportError, ValueError):
        return False


@dataclass
class _Setup:
    """What every run of one verify call shares."""
    script: Path
    np: int
    args: Sequence[str]
    steps: int | None
    timeout: float | None
    sink: Callable[[str], None] | None
    horovodrun: str | None
    env: dict | None
    pythonpath: Sequence[str | os.PathLike]
    backend: str
    python: str | None
    record_losses: bool
    local_devices: int = 1


def _check_inputs(script, np: int, backend: str, python, horovodrun):
    script = Path(script).resolve()
    if not script.is_file():
        raise VerifyInputError(f"no such script: {script}")
    if np < 1:
        raise VerifyInputError("-np must be at least 1")
    if backend not in BACKENDS:
        raise VerifyInputError(f"unknown backend {backend!r} (available: {', '.join(BACKENDS)})")
    if backend == TF_DISTRIBUTE:
        return script, None, python or sys.executable
    hvdrun = horovodrun or launcher.find_horovodrun()
    if hvdrun is None:
        raise launcher.RuntimeMissing()
    return script, hvdrun, python


def _run_original(setup: _Setup, original: Path, base: Path) -> Observation:
    return run_and_observe(original, 1, base / "original", setup.timeout, setup.args, single=True,
                           steps_cap=setup.steps or None, probe_dir=base / "probe-original",
                           log_path=base / "original.log", sink=setup.sink, horovodrun=setup.horovodrun,
                           label="original, 1 process", env=setup.env, pythonpath=setup.pythonpath,
                           backend=setup.backend, python=setup.python, record_losses=setup.record_losses)


def _run_converted(setup: _Setup, reference: Observation, base: Path, dist_script: Path, status: str, *,
                   policy: str | None = None, rel_tolerance: float = C.DEFAULT_REL_TOLERANCE,
                   abs_tolerance: float = C.DEFAULT_ABS_TOLERANCE) -> VerifyReport:
    """Run the conversion (``status`` "given": the script itself) on N
    processes, check it against the original's run, and compare their losses."""
    script, np = setup.script, setup.np
    converted = status == "given"
    as_file = script if dist_script != script else None
    what = "workers" if setup.backend == TF_DISTRIBUTE else "ranks"
    if setup.local_devices > 1:     # one process replicating over its devices (MirroredStrategy)
        what = f"process x {setup.local_devices} devices"
    label = f"{policy}, {np} {what}" if policy else f"converted, {np} {what}"
    distributed = run_and_observe(dist_script, np, base / "distributed", setup.timeout, setup.args,
                                  single=setup.local_devices > 1, local_devices=setup.local_devices,
                                  as_file=as_file, steps_cap=math.ceil(setup.steps / np) if setup.steps else None,
                                  probe_dir=base / "probe-distributed", log_path=base / "distributed.log",
                                  sink=setup.sink, horovodrun=setup.horovodrun, label=label, env=setup.env,
                                  pythonpath=setup.pythonpath, backend=setup.backend, python=setup.python,
                                  record_losses=setup.record_losses)
    samples: dict = {}
    reasons, checks, warnings = check(reference, distributed, np, setup.steps, samples_out=samples,
                                      backend=setup.backend, local_devices=setup.local_devices)
    comparison = None
    if setup.record_losses:
        comparison = C.compare(C.curve_of(reference), C.curve_of(distributed, label, policy),
                               rel_tolerance, abs_tolerance)
        reasons = reasons + [f"does not learn like the original: {r}" for r in comparison.reasons]
        if comparison.passed:
            checks.append(f"learns like the original: final loss {C._num(comparison.converted.final)} vs "
                          f"{C._num(comparison.original.final)} (ratio {C._num(comparison.ratio, '.3f')}), within "
                          f"max({rel_tolerance:g} x original, {abs_tolerance:g})")
    return VerifyReport(script=str(script), np=np, passed=not reasons, reasons=reasons, checks=checks,
                        warnings=warnings, reference=reference, distributed=distributed,
                        converted_path=None if converted else str(dist_script), conversion_status=status,
                        steps_cap=setup.steps, samples=samples or None, policy=policy, comparison=comparison)


def verify_script(script: str | os.PathLike, np: int = 2, args: Sequence[str] = (), *, converted: bool = False,
                  steps: int | None = None, timeout: float | None = DEFAULT_TIMEOUT, keep: bool = False,
                  workdir: str | os.PathLike | None = None, sink: Callable[[str], None] | None = None,
                  horovodrun: str | None = None, env: dict | None = None,
                  pythonpath: Sequence[str | os.PathLike] = (), backend: str = HOROVOD,
                  python: str | None = None, compare: bool = False, options: Sequence[str] = (),
                  policy: str | None = None, original: str | os.PathLike | None = None,
                  rel_tolerance: float = C.DEFAULT_REL_TOLERANCE,
                  abs_tolerance: float = C.DEFAULT_ABS_TOLERANCE, local_devices: int = 1) -> VerifyReport:
    """Convert (unless ``converted``), run the original single-process and the
    converted script on ``np`` ranks, and check the result.

    ``local_devices`` > 1 (tf-distribute, ``np`` 1): the conversion runs as
    one process whose CPU is split into that many logical devices, so its
    MirroredStrategy() replicates over them as over as many GPUs.

    ``backend``: "horovod" (horovodrun) or "tf-distribute" (N TF_CONFIG
    workers; both runs use ``python``, default sys.executable, and the
    original runs without TF_CONFIG).  ``options``: conversion options
    (``lr-sqrt``, ``warmup-1``...), ``policy`` their name in the report.

    ``steps``: cap for a quick check (see ``tfdist verify --help``): the
    original stops Model.fit after ``steps`` optimizer steps, each rank after
    ceil(steps/np); the 1/N check then uses the steps fit had planned.
    ``compare``: also record the training loss of both runs and judge the
    converted run against the original (tfdist.runtime.compare).
    ``original``: with ``converted``, the single-process script to compare
    with (default: ``script`` itself as one process).
    Raises VerifyInputError (bad input) and launcher.RuntimeMissing."""
    script, hvdrun, python = _check_inputs(script, np, backend, python, horovodrun)
    if local_devices > 1 and (backend != TF_DISTRIBUTE or np != 1):
        raise VerifyInputError("--local-devices N runs the tf-distribute conversion as one process over N devices: "
                               "use it with --backend tf-distribute and -np 1")
    reference_script = script
    if original is not None:
        if not converted:
            raise VerifyInputError("--original goes with --converted (the script given is the conversion)")
        reference_script = Path(original).resolve()
        if not reference_script.is_file():
            raise VerifyInputError(f"no such script: {reference_script}")
    setup = _Setup(script, np, args, steps, timeout, sink, hvdrun, env, pythonpath, backend, python, compare,
                   local_devices)
    base = Path(workdir) if workdir else Path(tempfile.mkdtemp(prefix="tfdist-verify-"))
    base.mkdir(parents=True, exist_ok=True)
    try:
        if converted:
            dist_script, status = script, "given"
        else:   # a conversion that fails is bad input: said before anything runs
            dist_script, status = convert_to(script, base / "converted", backend, options)
        reference = _run_original(setup, reference_script, base)
        report = _run_converted(setup, reference, base, dist_script, status, policy=policy,
                                rel_tolerance=rel_tolerance, abs_tolerance=abs_tolerance)
        report.workdir = str(base) if keep else None
        return report
    finally:
        if not keep and not workdir:
            shutil.rmtree(base, ignore_errors=True)


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
            lines.append(f"  {policy}: not tried: {_brief(why, 220)}")
        for r in self.reports:
            lines.append(f"  {r.policy}: {'PASS' if r.passed else 'FAIL'}"
                         + ("" if r.passed else ": " + "; ".join(_brief(x, 220) for x in r.reasons)))
        lines.extend(C.format_table(self.comparisons))
        best = next((r for r in self.reports if r.policy == self.best), None)
        if best is not None:
            lines.append(f"best: {self.best} tracks the original best (final loss ratio "
                         f"{C._num(best.comparison.ratio, '.3f')}, curve gap {C._num(best.comparison.curve_gap, '.1%')})"
                         + ("" if best.passed else " but FAILs"))
        if self.workdir:
            lines.append(f"  (run directories and logs kept in {self.workdir})")
        return "\n".join(lines)


def sweep_script(script: str | os.PathLike, policies: Sequence[str] | None = None, np: int = 2,
                 args: Sequence[str] = (), *, steps: int | None = None, timeout: float | None = DEFAULT_TIMEOUT,
                 keep: bool = False, sink: Callable[[str], None] | None = None, horovodrun: str | None = None,
                 env: dict | None = None, pythonpath: Sequence[str | os.PathLike] = (), backend: str = HOROVOD,
                 python: str | None = None, rel_tolerance: float = C.DEFAULT_REL_TOLERANCE,
                 abs_tolerance: float = C.DEFAULT_ABS_TOLERANCE, steps_per_epoch: int | None = None) -> SweepReport:
    """``verify --compare`` under each learning-rate policy (``linear``,
    ``sqrt``, ``none``, ``linear:warmup=1``...), with one run of the original;
    warmups counted in ``steps_per_epoch`` original steps when given."""
    script, hvdrun, python = _check_inputs(script, np, backend, python, horovodrun)
    optional = set()
    if policies is None:
        policies = list(DEFAULT_SWEEP)
        if converter_accepts(backend, policy_options(DEFAULT_SWEEP_WARMUP, steps_per_epoch)):
            policies.append(DEFAULT_SWEEP_WARMUP)
            optional.add(DEFAULT_SWEEP_WARMUP)   # not every pattern has a warmup: skipped where refused
    chosen = [(p, policy_options(p, steps_per_epoch)) for p in policies]
    setup = _Setup(script, np, args, steps, timeout, sink, hvdrun, env, pythonpath, backend, python, True)
    base = Path(tempfile.mkdtemp(prefix="tfdist-sweep-"))
    try:
        # every conversion first: bad input is said before anything runs
        conversions, skipped = [], []
        for i, (policy, options) in enumerate(list(chosen)):
            try:
                conversions.append(convert_to(script, base / f"policy-{i}" / "converted", backend, options))
            except VerifyInputError as exc:
                if policy not in optional:
                    raise
                skipped.append((policy, str(exc)))
                chosen.remove((policy, options))
        reference = _run_original(setup, script, base)
        reports = []
        for i, ((policy, _), (dist_script, status)) in enumerate(zip(chosen, conversions)):
            reports.append(_run_converted(setup, reference, base / f"policy-{i}", dist_script, status, policy=policy,
                                          rel_tolerance=rel_tolerance, abs_tolerance=abs_tolerance))
        best = C.best_of([r.comparison for r in reports if r.comparison is not None])
        return SweepReport(str(script), np, reports, best.converted.policy if best else None,
                           str(base) if keep else None, skipped)
    finally:
        if not keep:
            shutil.rmtree(base, ignore_errors=True)


# --------------------------------------------------------------------------
# Text report
# --------------------------------------------------------------------------

def _files_cell(rec: RankRecord, root: str) -> str:
    """Gated files, grouped by directory when there are many."""
    gated = rec.gated_files()
    if not gated:
        return "-"
    if len(gated) <= 3:
        return ", ".join(f"{_rel(f.path, root)} ({f.kind})" for f in gated)
    groups: dict[tuple[str, str], int] = {}
    for f in gated:
        rel = _rel(f.path, root)
        parent = os.path.dirname(rel)
        key = ((parent + "/") if parent else rel, f.kind)
        groups[key] = groups.get(key, 0) + 1
    return ", ".join(f"{where} ({n} {kind})" if n > 1 else f"{where} ({kind})" for (where, kind), n in groups.items())


def format_report(report: VerifyReport) -> str:
    lines = []
    how = {"given": "given as already converted", "converted": "converted by tfdist",
           "already-distributed": "already distributed; run as is"}.get(report.conversion_status or "", "")
    engine = report.distributed.backend if report.distributed else HOROVOD
    lines.append(f"tfdist verify {report.script}  ({how}; {report.np} ranks"
                 + ("; tf-distribute workers, rank 0 = chief" if engine == TF_DISTRIBUTE else "")
                 + (f"; --steps {report.steps_cap}" if report.steps_cap else "") + ")")
    header = f"  {'':<22}{'exit':>5}  {'steps':>7}  {'vars':>5}  {'sha256':<12}  {'sum':>14}  files written (checkpoint/summary/model)"
    lines.append(header)

    def row(label, rec: RankRecord, obs: Observation):
        if rec.missing:
            return f"  {label:<22}{'?':>5}  {'':>7}  {'':>5}  {'(no probe record)':<12}"
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
            lines.append(row(f"rank {rec.rank}", rec, report.distributed))
    if any(r.cap_applied for obs in (report.reference, report.distributed) if obs for r in obs.ranks):
        lines.append("  (steps shown as taken/planned: Model.fit was stopped by --steps)")
    if report.comparison is not None:
        lines.extend(C.format_table([report.comparison]))
    for c in report.checks:
        lines.append(f"  ok: {c}")
    for w in report.warnings:
        lines.append(f"  warning: {w}")
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
