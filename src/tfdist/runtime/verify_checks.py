"""The checks of `tfdist verify`, as typed results.

Each check compares what the distributed run did with what a correct
distribution of the original does, and yields a Check: a stable ``name``
("exit-codes", "variables-identical", "steps-per-rank"...), whether it
``passed``, what was ``measured`` and ``expected`` (JSON-able), and the
``detail`` sentence the text report prints.  Nothing here decides how the
results are shown: verify_report turns them into the reasons/checks text
lines, the JSON of --json and the report table.
"""
from __future__ import annotations

from . import compare as C
from .verify_records import TF_DISTRIBUTE, Observation, RankRecord
from .verify_results import Check, CheckResults, SampleResults, brief, by_rank, rel_path, short_list  # noqa: F401
from .verify_sample_checks import sample_checks

# verify.py (another helper's) imports SampleResults, sample_checks and these three private names
# from here: kept until it takes them from verify_results / verify_sample_checks.
_brief, _rel, _short_list = brief, rel_path, short_list

#: Allowed deviation of a rank's optimizer steps from reference/N: the larger
#: of this fraction of the expectation and STEP_TOLERANCE_ABS steps.
STEP_TOLERANCE_REL = 0.2
STEP_TOLERANCE_ABS = 1
#: Relative difference allowed between a rank's learning rate and the
#: original's times the policy's factor (float32 rounding).
RATE_TOLERANCE_REL = 1e-5

#: The names a Check can have, in the order the checks run.
CHECK_NAMES = (
    "original-exit",          # the original ran to exit 0 single-process
    "distributed-finished",   # the distributed run ended before its timeout
    "exit-codes",             # every rank (and the launcher) exited 0
    "strategy-spans-workers",  # tf-distribute: every worker's strategy spans all workers
    "local-replicas",         # --local-devices: the strategy replicates over every device, copies identical
    "world-size",             # Horovod: every rank reports the world size N
    "variables-identical",    # final trainable variables bitwise identical across ranks
    "steps-per-rank",         # each rank took ~1/N of the original's optimizer steps
    "learning-rate-scaled",   # Keras fit: the first fit's learning rate is the original's x the policy's factor
    "sample-pairs-intact",    # every sample a rank fed carried the labels the original fed it with
    "work-divided",           # the ranks did not all consume the identical samples
    "chief-writes",           # only rank 0 wrote checkpoints/summaries/models (at the user's paths)
    "temp-files-removed",     # tf-distribute: the other workers removed their temporary saves
    "loss-within-tolerance",  # --compare: the converted run learns like the original
)


def expected_steps(reference_steps: int, np: int) -> tuple[float, float]:
    """(expected steps per rank, allowed deviation)."""
    expected = reference_steps / np
    return expected, max(STEP_TOLERANCE_ABS, STEP_TOLERANCE_REL * expected)


# --------------------------------------------------------------------------
# The checks
# --------------------------------------------------------------------------

def run_checks(reference: Observation, distributed: Observation, np: int, steps_cap: int | None = None,
               backend: str | None = None, local_devices: int = 1,
               rate_factor: float | None = None, full_batch: bool = False) -> CheckResults:
    """Check the distributed run against the original's.  ``backend``
    defaults to the distributed observation's.  ``local_devices``: devices
    each process replicates over (tf-distribute, verify --local-devices): the
    steps are then 1/(np x local_devices) of the original's, and each
    process's copies of a variable must be identical."""
    backend = backend or distributed.backend
    tfd = backend == TF_DISTRIBUTE
    out = CheckResults()
    checks, warnings = out.checks, out.warnings
    ref = reference.ranks[0] if reference.ranks else RankRecord.missing_rank(0, 1)
    ranks = distributed.ranks[:np]
    strays = distributed.ranks[np:]

    # 1. exit status -------------------------------------------------------
    checks.extend(exit_checks(reference, ref, distributed, ranks, np, tfd))
    if strays:
        warnings.append(f"{len(strays)} extra probe record(s) (processes started by the script?)")
    checks.extend(_topology_checks(ranks, np, tfd, local_devices))

    present = [r for r in ranks if not r.missing]

    # 2. identical trainable variables ------------------------------------
    if present:
        checks.append(_variables_check(present))
        counts = {r.trainable_count for r in present}
        if not ref.missing and ref.trainable_count and counts and ref.trainable_count not in counts:
            warnings.append(f"the original has {ref.trainable_count} trainable variables, the ranks "
                            f"{sorted(counts)}")

    # 3. optimizer steps ~ reference / N --------------------------------
    use_planned = bool(steps_cap) and (ref.cap_applied or any(r.cap_applied for r in present))
    if steps_cap and not use_planned:
        warnings.append(f"--steps {steps_cap} had no effect: no Keras Model.fit loop reached the cap, "
                        "the scripts ran to completion")
    steps = None
    if present and not ref.missing:
        steps = _steps_check(ref, present, np, local_devices, use_planned, tfd, full_batch)
        checks.append(steps)

    # 3b. the learning rate the conversion's policy gives --------------------
    if rate_factor is not None and present and not ref.missing:
        rate = rate_check(ref, present, rate_factor)
        if rate is not None:
            checks.append(rate)

    # 4. samples: pairs intact, work divided --------------------------------
    _add_sample_checks(out, ref, present, np, tfd, steps)

    # 5. only rank 0 writes checkpoints / summaries / models ----------------
    if tfd:
        checks.extend(_writer_checks_tf_distribute(present, distributed))
    else:
        checks.extend(_writer_checks_horovod(present, distributed))
    warnings.extend(_file_warnings(ref, present, distributed))
    for r in [ref, *present]:
        for err in r.probe_errors[:3]:
            warnings.append(f"probe ({'original' if r is ref else f'rank {r.rank}'}): {err}")
    return out


def _topology_checks(ranks: list[RankRecord], np: int, tfd: bool, local_devices: int) -> list[Check]:
    """tf-distribute: every worker's strategy spans the cluster (and, with
    --local-devices, replicates over its devices); Horovod: every rank reports
    the world size N."""
    if tfd:
        out = list(_span_checks(ranks, np))
        if local_devices > 1:
            out.extend(_local_replica_checks([r for r in ranks if not r.missing and r.exit_code == 0],
                                             np * local_devices))
        return out
    sizes = {r.size for r in ranks if not r.missing}
    if not sizes:
        return []
    ok = sizes == {np}
    return [Check("world-size", ok, measured=sorted(sizes), expected=np,
                  detail="" if ok else f"ranks report world size {sorted(sizes)}, expected {np} "
                                       "(did the script call hvd.init()?)")]


def _add_sample_checks(out: CheckResults, ref: RankRecord, present: list[RankRecord], np: int, tfd: bool,
                       steps: Check | None) -> None:
    """The sample checks, with why they could not run; a work-divided
    failure the steps check already explains is said there once."""
    sampled = sample_checks(ref, present, np)
    skipped = sorted({note for r in [ref, *present] if not r.missing for note in r.samples_skipped})
    if skipped and sampled.summary is None:
        sampled.warnings.append("samples the probe could not attribute to a rank were not recorded: "
                                + "; ".join(skipped))
    elif tfd and sampled.summary is None and not sampled.warnings:
        sampled.warnings.append("samples not checked: no run recorded the samples it trained on (the probe "
                                "sees eager iteration only; Model.fit on a dataset iterates inside a tf.function)")
    if sampled.identical and steps is not None and steps.measured.get("whole_dataset"):
        # Same cause as the steps failure: said there instead of twice.
        divided = next(c for c in sampled.checks if c.name == "work-divided")
        steps.detail += "; the samples confirm it: " + divided.detail.split(": ", 1)[1]
        divided.said_by = steps.name
    out.checks.extend(sampled.checks)
    out.warnings.extend(sampled.warnings)
    out.samples = sampled.summary


def exit_checks(reference: Observation, ref: RankRecord, distributed: Observation, ranks: list[RankRecord],
                 np: int, tfd: bool) -> list[Check]:
    out = []
    if reference.timed_out:
        out.append(Check("original-exit", False, measured="timeout", expected=0,
                         detail=f"the original script timed out single-process after {reference.duration_s:.0f}s"))
    elif ref.missing:
        out.append(Check("original-exit", False, measured=None, expected=0,
                         detail=f"the original script left no probe record single-process "
                                f"(exit {reference.returncode})"))
    elif ref.exit_code != 0:
        out.append(Check("original-exit", False, measured=ref.exit_code, expected=0,
                         detail=f"the original script failed single-process (exit {ref.exit_code}"
                                + (f": {brief(ref.exception)}" if ref.exception else "") + ")"))
    else:
        out.append(Check("original-exit", True, measured=0, expected=0))
    if distributed.timed_out:
        out.append(Check("distributed-finished", False, measured=round(distributed.duration_s, 2),
                         detail=f"the distributed run timed out after {distributed.duration_s:.0f}s and was killed"))
    measured = {"ranks": by_rank({r.rank: None if r.missing else r.exit_code for r in ranks}),
                "launcher": distributed.returncode}
    bad = []
    for r in ranks:
        if r.missing:
            bad.append(f"rank {r.rank} left no probe record (killed or crashed hard)")
        elif r.exit_code != 0:
            bad.append(f"rank {r.rank} exited {r.exit_code}" + (f" ({brief(r.exception)})" if r.exception else ""))
    if bad:
        out.append(Check("exit-codes", False, measured, 0, "; ".join(bad)))
    elif distributed.returncode != 0 and not distributed.timed_out:
        if tfd:
            text = (f"a worker process exited {distributed.returncode} although every worker's script "
                    "returned 0 (crash at exit?)")
        else:
            text = f"horovodrun exited {distributed.returncode} although every rank's script returned 0"
        out.append(Check("exit-codes", False, measured, 0, text))
    else:
        out.append(Check("exit-codes", True, measured, 0, f"all {np} {'workers' if tfd else 'ranks'} exited 0"))
    return out


def _span_checks(ranks: list[RankRecord], np: int) -> list[Check]:
    # a rank that crashed still tells what strategy it built before it did (two
    # workers that each train alone can crash on each other's files); one that
    # crashed before building any says nothing about the script's strategy
    spans = {r.rank: r.multi_worker_size for r in ranks
             if not r.missing and (r.exit_code == 0 or r.multi_worker_size is not None)}
    off = {k: v for k, v in spans.items() if v != np}
    if off:
        detail = ", ".join(f"rank {k}: " + ("no tf.distribute strategy" if v is None else f"{v} worker(s)")
                           for k, v in sorted(off.items()))
        return [Check("strategy-spans-workers", False, by_rank(spans), np,
                      f"the workers did not build a tf.distribute strategy spanning all {np} workers ({detail}); "
                      "does the script create a MultiWorkerMirroredStrategy when TF_CONFIG is set?")]
    if spans:
        classes = sorted({s.get("class", "?") for r in ranks if not r.missing for s in r.strategies
                          if int(s.get("num_workers") or 1) == np})
        return [Check("strategy-spans-workers", True, by_rank(spans), np,
                      f"every worker built a {'/'.join(classes)} spanning the {np} workers")]
    return []


def _local_replica_checks(present: list[RankRecord], replicas: int) -> list[Check]:
    """Several devices per process: the script's strategy must run on all of
    them, and each process's per-device copies must have stayed identical."""
    name = "local-replicas"
    off = {r.rank: r.replicas_in_sync for r in present if r.replicas_in_sync != replicas}
    if off:
        return [Check(name, False, {"replicas_in_sync": by_rank({r.rank: r.replicas_in_sync for r in present})},
                      replicas,
                      f"the strategy does not replicate over all {replicas} devices ("
                      + ", ".join(f"rank {k}: {v or 'no strategy'}" for k, v in sorted(off.items()))
                      + "); does the script build MirroredStrategy() over every local device?")]
    differing = {r.rank: r.replica_copies.get("differing") or [] for r in present}
    differing = {k: v for k, v in differing.items() if v}
    checked = sum(int(r.replica_copies.get("checked") or 0) for r in present)
    measured = {"replicas_in_sync": replicas, "variables_checked": checked, "differing": by_rank(differing)}
    if differing:
        return [Check(name, False, measured, replicas,
                      "the replicas' copies of trainable variables differ within a process (gradients not "
                      "all-reduced across devices?): " + "; ".join(f"rank {k}: {short_list(v)}"
                                                                    for k, v in sorted(differing.items())))]
    if not checked:
        return [Check(name, False, measured, replicas,
                      f"no trainable variable replicated over the {replicas} devices was observed "
                      "(variables created outside strategy.scope()?)")]
    return [Check(name, True, measured, replicas,
                  f"the strategy runs {replicas} replicas; their copies of {checked} trainable variable(s) "
                  "are bitwise identical")]


def _variables_check(present: list[RankRecord]) -> Check:
    name = "variables-identical"
    counts = {r.trainable_count for r in present}
    hashes = {r.trainable_sha256 for r in present}
    measured = {"count": by_rank({r.rank: r.trainable_count for r in present}),
                "sha256": by_rank({r.rank: r.trainable_sha256 for r in present})}
    if counts == {0}:
        return Check(name, False, measured, "identical", "no trainable variables were observed on any rank")
    if len(counts) > 1:
        return Check(name, False, measured, "identical", "ranks hold different numbers of trainable variables: "
                     + ", ".join(f"rank {r.rank}: {r.trainable_count}" for r in present))
    if len(hashes) > 1:
        base = present[0]
        detail = []
        for other in present[1:]:
            if other.trainable_sha256 == base.trainable_sha256:
                continue
            diff = [var for (var, d0), (_, d1) in zip(base.variable_digests, other.variable_digests) if d0 != d1]
            detail.append(f"rank {other.rank} differs from rank {base.rank} in {len(diff)} of "
                          f"{base.trainable_count} variables (first: {diff[0] if diff else '?'})")
        return Check(name, False, measured, "identical",
                     "final trainable variables differ between ranks (not bitwise identical; "
                     "missing initial broadcast or gradient averaging?): " + "; ".join(detail))
    return Check(name, True, measured, "identical",
                 f"all ranks hold bitwise-identical trainable variables "
                 f"({present[0].trainable_count} variables, sha256 {present[0].trainable_sha256[:12]})")


def _steps_check(ref: RankRecord, present: list[RankRecord], np: int, local_devices: int, use_planned: bool,
                 tfd: bool, full_batch: bool = False) -> Check:
    """``measured``: {"original", "ranks", "planned", "whole_dataset"} (the
    last: every rank off went through the whole dataset). ``full_batch``:
    the conversion divides each step's data between the ranks, not the
    steps (full-batch training; train_on_batch under tf.distribute, which
    splits the batch it is given): every rank runs all of the original's
    steps."""
    name = "steps-per-rank"
    if use_planned:
        what = "planned optimizer steps (Model.fit, before the --steps cap)"
        ref_steps = ref.planned_steps
        rank_steps = {r.rank: r.planned_steps for r in present}
    else:
        what = "optimizer steps"
        ref_steps = ref.optimizer_steps
        rank_steps = {r.rank: r.optimizer_steps for r in present}
    measured = {"original": ref_steps, "ranks": by_rank(rank_steps), "planned": use_planned,
                "whole_dataset": False}
    share = np * local_devices
    if ref_steps is None or any(v is None for v in rank_steps.values()):
        return Check(name, False, measured, None,
                     f"cannot check the 1/{np} split of {what}: unknown for "
                     + ("the original" if ref_steps is None else "some ranks")
                     + " (dataset of unknown length?); rerun without --steps")
    if not ref_steps:
        return Check(name, False, measured, None,
                     "the original script took no optimizer steps that tfdist could observe "
                     "(no Keras optimizer iterations, TF1 train op or global step)")
    expected, tol = expected_steps(ref_steps, 1 if full_batch else share)
    wanted = {"per_rank": expected, "tolerance": tol}
    off = {r: s for r, s in rank_steps.items() if abs(s - expected) > tol}
    per_rank = ", ".join(f"rank {r}: {s}" for r, s in sorted(rank_steps.items()))
    if full_batch:
        measured["full_batch"] = True
        if not off:
            return Check(name, True, measured, wanted,
                         f"each rank took all of the original's {ref_steps} {what}, each on its share of the "
                         f"step's data (the conversion divides each step's data, not the steps) ({per_rank})")
        return Check(name, False, measured, wanted,
                     f"{what} per rank are not the original's {ref_steps} (the conversion divides each step's "
                     f"data, not the steps: every step on each rank's share; {per_rank})")
    if not off:
        every = None if use_planned else _all_optimizers_steps(ref, present, share)
        if every is not None and every[1]:
            totals, expected_total, tol_total = every[0], *expected_steps(every[2], share)
            measured["all_optimizers"] = {"original": every[2], "ranks": by_rank(totals)}
            return Check(name, False, measured, wanted,
                         f"the original stepped several optimizers ({every[2]} steps in all); a rank's are not "
                         f"~1/{share} of them (expected {expected_total:g} +/- {tol_total:g}; "
                         + ", ".join(f"rank {r}: {s}" for r, s in sorted(totals.items()))
                         + ") - one training divided differently from the others (its data divided twice, or "
                         "not at all?)")
        return Check(name, True, measured, wanted,
                     f"each rank took ~1/{share} of the original's {ref_steps} {what} ({per_rank})"
                     + (f"; the {every[2]} steps of all its optimizers too" if every is not None else ""))
    rows = None if use_planned else _rows_divided(ref, present, share)
    if rows is not None and all(expected + tol < s < ref_steps for s in off.values()):
        measured["rows"] = {"original": rows[0], "ranks": by_rank(rows[1])}
        return Check(name, True, measured, wanted,
                     f"each rank fed ~1/{share} of the original's {rows[0]} samples, in more than 1/{share} of its "
                     f"{ref_steps} {what} ({per_rank}): each pass over its share ends in a partial batch, a step "
                     "of its own")
    hint = ""
    if all(s >= ref_steps - tol for s in off.values()):
        measured["whole_dataset"] = True
        if tfd:
            hint = (" - every rank went through the whole dataset (data not sharded: dataset not "
                    "distributed by the strategy, or auto-sharding switched off?)")
        else:
            hint = " - every rank went through the whole dataset (data not sharded / steps not divided by hvd.size()?)"
    return Check(name, False, measured, wanted,
                 f"{what} per rank are not ~1/{share} of the original's {ref_steps} "
                 f"(expected {expected:g} +/- {tol:g}; {per_rank}){hint}")


def _rows_divided(ref: RankRecord, present: list[RankRecord], share: int):
    """(the original's trained rows, each rank's) when every rank trained on
    ~1/share of the original's rows (none capped), else None: the work was
    divided though the steps were not (partial batches: 512 rows in batches
    of 200 are 3 steps; 256 per rank, 2)."""
    streams = [r.sample_stream() for r in (ref, *present)]
    if any(st is None or st.capped for st in streams) or not streams[0].rows:
        return None
    ref_rows = len(streams[0].rows)
    rows = {r.rank: len(st.rows) for r, st in zip(present, streams[1:])}
    expected, tol = expected_steps(ref_rows, share)
    return (ref_rows, rows) if all(abs(n - expected) <= tol for n in rows.values()) else None


def _all_optimizers_steps(ref: RankRecord, present: list[RankRecord], share: int):
    """When the original stepped more than one Keras optimizer (a notebook
    training two models): (each rank's steps summed over its optimizers,
    whether one is off, the original's sum). Each training must be divided
    like the others: the busiest optimizer alone would not show one
    trained on a quarter of the data. None with fewer than two."""
    def total(record):
        return sum(o.get("iterations") or 0 for o in record.keras_optimizers)
    if sum(1 for o in ref.keras_optimizers if o.get("iterations")) < 2:
        return None
    totals = {r.rank: total(r) for r in present}
    expected, tol = expected_steps(total(ref), share)
    return totals, any(abs(t - expected) > tol for t in totals.values()), total(ref)


def rate_check(ref: RankRecord, present: list[RankRecord], factor: float) -> Check | None:
    """The learning rates the first Model.fit trains with (of the optimizers
    it steps: the model's, or those a custom train_step applies) are, on
    every rank, the original's times ``factor`` (the conversion's policy: N,
    sqrt(N), 1); None when the original ran no fit whose rates the probe
    could read."""
    original = ref.fit_rates[0] if ref.fit_rates else None
    if not isinstance(original, list) or not original or any(r is None for r in original):
        return None
    expected = [r * factor for r in original]

    def right(got):
        return isinstance(got, list) and len(got) == len(expected) and all(
            g is not None and abs(g - e) <= RATE_TOLERANCE_REL * max(abs(e), 1e-12) for g, e in zip(got, expected))

    def said(values):
        return "unread" if not isinstance(values, list) or any(v is None for v in values) else \
            ", ".join(f"{v:.6g}" for v in values) or "none"

    rates = {r.rank: (r.fit_rates[0] if r.fit_rates else None) for r in present}
    wrong = {k: v for k, v in rates.items() if not right(v)}
    what = f"the original's {said(original)} x {factor:.6g}"
    if not wrong:
        return Check("learning-rate-scaled", True, measured=by_rank(rates), expected=expected,
                     detail=f"the first fit trains with learning rate {said(expected)} on every rank ({what})")
    return Check("learning-rate-scaled", False, measured=by_rank(rates), expected=expected,
                 detail=f"the first fit's learning rate is not {what} = {said(expected)} ("
                        + "; ".join(f"rank {k}: {said(v)}" for k, v in sorted(wrong.items())) + ")")


def _writer_checks_horovod(present: list[RankRecord], distributed: Observation) -> list[Check]:
    offenders, measured = [], {}
    for r in present:
        if r.rank == 0:
            continue
        gated = r.gated_files()
        if gated:
            kinds = sorted({f.kind for f in gated})
            paths = [rel_path(f.path, distributed.cwd) for f in gated]
            measured[r.rank] = paths
            offenders.append(f"rank {r.rank} wrote {'/'.join(kinds)} files: " + short_list(paths))
    if offenders:
        return [Check("chief-writes", False, {"other_ranks": by_rank(measured)}, "rank 0 only",
                      "only rank 0 may write checkpoints/summaries/models; " + "; ".join(offenders))]
    if present:
        r0 = next((r for r in present if r.rank == 0), None)
        n0 = len(r0.gated_files()) if r0 else 0
        return [Check("chief-writes", True, {"rank_0": n0, "other_ranks": {}}, "rank 0 only",
                      f"only rank 0 wrote checkpoint/summary/model files ({n0} path(s))")]
    return []


def _writer_checks_tf_distribute(present: list[RankRecord], distributed: Observation) -> list[Check]:
    """The multi-worker rule: every worker may save (saving can run collective
    operations), but only the chief (worker 0) at the user's paths; the others
    write into temporary directories they remove.  Paths in the system's
    temporary directory are not recorded by the probe at all; files in
    TensorFlow's own ``workertemp_<N>`` directories (inside the user's
    directory) are allowed when they were removed again."""
    offenders, leftovers, temp_notes = [], [], []
    at_user_paths, kept_paths = {}, {}
    for r in present:
        if r.rank == 0:
            continue
        gated = r.gated_files()
        at_user = [f for f in gated if not f.multi_worker_temp]
        kept = [f for f in gated if f.multi_worker_temp and not f.removed_temp]
        removed = [f for f in gated if f.removed_temp]
        if at_user:
            kinds = sorted({f.kind for f in at_user})
            at_user_paths[r.rank] = [rel_path(f.path, distributed.cwd) for f in at_user]
            offenders.append(f"rank {r.rank} wrote {'/'.join(kinds)} files: " + short_list(at_user_paths[r.rank]))
        if kept:
            kept_paths[r.rank] = [rel_path(f.path, distributed.cwd) for f in kept]
            leftovers.append(f"rank {r.rank} left " + short_list(kept_paths[r.rank]))
        if removed:
            temp_notes.append(f"rank {r.rank}: {len(removed)}")
    if not present:
        return []
    out = []
    writers = {"other_ranks": by_rank(at_user_paths)}
    if offenders:
        out.append(Check("chief-writes", False, writers, "rank 0 only",
                         "only the chief (rank 0) may write checkpoints/summaries/models at the user's paths "
                         "(the other workers must save into temporary directories); " + "; ".join(offenders)))
    if leftovers:
        out.append(Check("temp-files-removed", False, {"left": by_rank(kept_paths)}, "removed",
                         "multi-worker temporary files were not removed: " + "; ".join(leftovers)))
    else:
        out.append(Check("temp-files-removed", True, {"left": {}}, "removed"))
    if not offenders:
        text = ""
        if not leftovers:
            r0 = next((r for r in present if r.rank == 0), None)
            n0 = len([f for f in r0.gated_files() if not f.multi_worker_temp]) if r0 else 0
            writers["rank_0"] = n0
            text = f"only the chief (rank 0) wrote checkpoint/summary/model files at the user's paths ({n0} path(s))"
            if temp_notes:
                text += ("; the other workers' saves went to multi-worker temporary directories they removed ("
                         + ", ".join(temp_notes) + " path(s))")
        out.insert(0, Check("chief-writes", True, writers, "rank 0 only", text))
    return out


def _file_warnings(ref: RankRecord, present: list[RankRecord], distributed: Observation) -> list[str]:
    warnings = []
    by_path: dict[str, list[int]] = {}
    for r in present:
        for f in r.files:
            if not f.gated:
                by_path.setdefault(f.path, []).append(r.rank)
    shared = [p for p, rs in by_path.items() if len(rs) > 1]
    if shared:
        warnings.append("several ranks wrote the same file(s): "
                        + short_list([rel_path(p, distributed.cwd) for p in shared]))
    if not ref.missing:
        ref_kinds = {f.kind for f in ref.gated_files()}
        r0 = next((r for r in present if r.rank == 0), None)
        if r0 is not None:
            lost = ref_kinds - {f.kind for f in r0.gated_files()}
            if lost:
                warnings.append(f"the original wrote {'/'.join(sorted(lost))} files but rank 0 of the "
                                "distributed run did not")
    return warnings


def loss_checks(comparison: C.Comparison) -> list[Check]:
    """verify --compare: the converted run's loss against the original's, one
    failed check per reason the comparison gives."""
    measured = {"final": comparison.converted.final, "original_final": comparison.original.final,
                "ratio": comparison.ratio, "curve_gap": comparison.curve_gap}
    expected = {"rel_tolerance": comparison.rel_tolerance, "abs_tolerance": comparison.abs_tolerance}
    if not comparison.passed:
        return [Check("loss-within-tolerance", False, measured, expected, f"does not learn like the original: {r}")
                for r in comparison.reasons]
    return [Check("loss-within-tolerance", True, measured, expected,
                  f"learns like the original: final loss {C.format_number(comparison.converted.final)} vs "
                  f"{C.format_number(comparison.original.final)} "
                  f"(ratio {C.format_number(comparison.ratio, '.3f')}), within "
                  f"max({comparison.rel_tolerance:g} x original, {comparison.abs_tolerance:g})")]
