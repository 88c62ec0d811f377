"""verify's checks as typed results, on records built by hand (no processes):
each check names itself, says what it measured against what it expected, a
failing check becomes a reason of the text report and of --json, and the
text is the same lines check() has always returned."""
import json
from types import SimpleNamespace

from tfdist.options import Options
from tfdist.runtime import compare as C
from tfdist.runtime.verify import (CHECK_NAMES, Check, FileWrite, Observation, RankRecord, VerifyReport, check,
                                   check_samples, run_checks)
from tfdist.runtime.verify import expected_rate_factor
from tfdist.runtime.verify_checks import loss_checks
from tfdist.runtime.verify_report import as_text, check_lines, reason_lines

SHA = "a" * 64
ROWS = [f"s{i}:l{i % 3}" for i in range(20)]


def _rank(rank, size=2, steps=10, sha=SHA, rows=None, files=(), strategies=(), exit_code=0, count=3):
    raw = {"samples": {"batches": [{"source": "tf1-feed", "rows": list(rows)}]}} if rows is not None else {}
    return RankRecord(rank=rank, size=size, exit_code=exit_code, trainable_count=count, trainable_sha256=sha,
                      variable_digests=[(f"v{i}", sha[:8] + str(i)) for i in range(count)], optimizer_steps=steps,
                      files=list(files), strategies=list(strategies), raw=raw)


def _run(ranks, np, backend="horovod", returncode=0):
    return Observation(label="run", np=np, cwd="/work", ranks=ranks, returncode=returncode, timed_out=False,
                       duration_s=1.0, command=["python"], backend=backend)


def _original(steps=20, rows=None, files=()):
    return _run([_rank(0, size=1, steps=steps, rows=rows, files=files)], 1)


def _by_name(results):
    return {c.name: c for c in results.checks}


def test_a_failing_check_renders_as_a_reason_and_a_passing_one_as_a_check():
    failed = Check("steps-per-rank", False, measured={"ranks": {"0": 20}}, expected={"per_rank": 10},
                   detail="optimizer steps per rank are not ~1/2 of the original's 20")
    passed = Check("exit-codes", True, measured={"launcher": 0}, expected=0, detail="all 2 ranks exited 0")
    silent = Check("world-size", True, measured=[2], expected=2)
    assert reason_lines([failed, passed, silent]) == [failed.detail]
    assert check_lines([failed, passed, silent]) == [passed.detail]
    reasons, checks = as_text([passed, failed, silent])
    report = VerifyReport(script="s.py", np=2, passed=not reasons, reasons=reasons, checks=checks, warnings=[],
                          reference=None, distributed=None, check_results=[passed, failed, silent])
    text = report.format_text()
    assert f"FAIL: {failed.detail}" in text and f"ok: {passed.detail}" in text
    assert "world-size" not in text and not text.endswith("PASS")
    document = json.loads(json.dumps(report.to_dict(), default=str))
    assert document["passed"] is False and document["reasons"] == [failed.detail]
    assert document["checks"] == [passed.detail]
    assert [(c["name"], c["passed"]) for c in document["check_results"]] == [
        ("exit-codes", True), ("steps-per-rank", False), ("world-size", True)]
    assert document["check_results"][1]["measured"] == {"ranks": {"0": 20}}


def test_a_failing_check_without_a_sentence_still_fails_the_text():
    assert reason_lines([Check("exit-codes", False)]) == ["exit-codes failed"]


def test_a_correct_run_passes_every_check_with_what_it_measured():
    ref, dist = _original(rows=ROWS), _run([_rank(0, rows=ROWS[:10]), _rank(1, rows=ROWS[10:])], 2)
    results = run_checks(ref, dist, 2)
    assert results.passed and results.failed() == []
    named = _by_name(results)
    assert set(named) <= set(CHECK_NAMES)
    assert {"original-exit", "exit-codes", "world-size", "variables-identical", "steps-per-rank",
            "sample-pairs-intact", "work-divided", "chief-writes"} <= set(named)
    assert named["steps-per-rank"].measured["ranks"] == {"0": 10, "1": 10}
    assert named["steps-per-rank"].expected == {"per_rank": 10.0, "tolerance": 2.0}
    assert named["variables-identical"].measured["sha256"] == {"0": SHA, "1": SHA}
    assert named["work-divided"].measured["coverage"] == 1.0
    reasons, checks, warnings = check(ref, dist, 2)
    assert reasons == [] and checks == check_lines(results.checks) and warnings == results.warnings
    assert any("bitwise-identical" in c for c in checks) and any("of the original's" in c for c in checks)


def test_differing_variables_fail_naming_the_first_variable_that_differs():
    other = "b" * 64
    results = run_checks(_original(), _run([_rank(0), _rank(1, sha=other)], 2), 2)
    variables = _by_name(results)["variables-identical"]
    assert not variables.passed and variables.measured["sha256"] == {"0": SHA, "1": other}
    assert "not bitwise identical" in variables.detail and "(first: v0)" in variables.detail
    assert variables.detail in check(_original(), _run([_rank(0), _rank(1, sha=other)], 2), 2)[0]


def test_undivided_data_fails_once_with_the_samples_as_evidence_of_the_steps():
    ref = _original(rows=ROWS)
    dist = _run([_rank(0, steps=20, rows=ROWS), _rank(1, steps=20, rows=ROWS)], 2)
    results = run_checks(ref, dist, 2)
    named = _by_name(results)
    steps, divided = named["steps-per-rank"], named["work-divided"]
    assert not steps.passed and steps.measured["whole_dataset"] is True
    assert not divided.passed and divided.said_by == "steps-per-rank"
    assert divided.measured["identical_sequences"] is True
    reasons, _, _ = check(ref, dist, 2)
    assert len(reasons) == 1, reasons
    assert reasons[0].startswith("optimizer steps per rank are not ~1/2 of the original's 20")
    assert "the samples confirm it: every rank consumed the identical sequence of 20 samples" in reasons[0]
    # without the steps failure, the samples say it themselves
    alone = check_samples(ref.ranks[0], dist.ranks, 2)
    assert alone["identical"] and alone["reasons"][0].startswith("work not divided")


def test_a_full_batch_conversion_runs_every_step_on_each_ranks_share():
    """Full-batch training (the conversion's FileResult.full_batch): each rank
    runs all of the original's steps on its half of the data. That passes;
    half the steps fails -- and so does the same data on every rank."""
    ref = _original(steps=20, rows=ROWS)
    halves = _run([_rank(0, steps=20, rows=ROWS[0::2]), _rank(1, steps=20, rows=ROWS[1::2])], 2)
    reasons, checks, _ = check(ref, halves, 2, full_batch=True)
    assert reasons == [], reasons
    assert any("each rank took all of the original's 20 optimizer steps" in c for c in checks), checks
    fewer = _run([_rank(0, steps=10, rows=ROWS[0::2]), _rank(1, steps=10, rows=ROWS[1::2])], 2)
    reasons, _, _ = check(ref, fewer, 2, full_batch=True)
    assert len(reasons) == 1 and "are not the original's 20 (the conversion divides each step's data" in reasons[0], reasons
    same = _run([_rank(0, steps=20, rows=ROWS), _rank(1, steps=20, rows=ROWS)], 2)
    reasons, _, _ = check(ref, same, 2, full_batch=True)
    assert any(r.startswith("work not divided") for r in reasons), reasons
    # read as divided steps, the correct full-batch run would fail
    assert check(ref, halves, 2)[0], "the steps check must know the conversion is full-batch"


def test_partial_batches_make_more_than_half_the_steps_of_a_divided_dataset():
    """512 rows in batches of 200: 3 steps a pass; each rank's 256, 2 steps a
    pass (the last batch of a share is partial). The steps are not half,
    the rows are: the work was divided, and the check says why it passes
    (a held-out set's tape loops FAILed here). Mutants: the same steps on
    all the rows of every rank (undivided data), every step of the original
    on half the rows (the batch not scaled), rows divided twice."""
    rows = [f"s{i}:l{i % 3}" for i in range(90)]
    ref = _original(steps=90, rows=rows)
    divided = _run([_rank(0, steps=60, rows=rows[0::2]), _rank(1, steps=60, rows=rows[1::2])], 2)
    reasons, checks, _ = check(ref, divided, 2)
    assert reasons == [], reasons
    assert any("each rank fed ~1/2 of the original's 90 samples, in more than 1/2 of its 90 optimizer steps" in c
               for c in checks), checks
    for ranks in ([_rank(0, steps=60, rows=rows), _rank(1, steps=60, rows=rows)],
                  [_rank(0, steps=90, rows=rows[0::2]), _rank(1, steps=90, rows=rows[1::2])],
                  [_rank(0, steps=60, rows=rows[0::4]), _rank(1, steps=60, rows=rows[1::4])]):
        reasons, _, _ = check(ref, _run(ranks, 2), 2)
        assert any("optimizer steps per rank are not ~1/2" in r for r in reasons), reasons


def test_broken_sample_label_pairs_count_the_mispaired_samples():
    relabelled = [row + "x" for row in ROWS[:10]]
    results = run_checks(_original(rows=ROWS), _run([_rank(0, rows=relabelled), _rank(1, rows=ROWS[10:])], 2), 2)
    pairs = _by_name(results)["sample-pairs-intact"]
    assert not pairs.passed and pairs.measured["mispaired"] == {"0": 10, "1": 0}
    assert "rank 0 fed 10 of 10 samples with labels that are not theirs" in pairs.detail


def test_other_ranks_writing_checkpoints_fail_with_their_paths():
    ckpt = FileWrite("/work/ckpt/model.h5", "checkpoint")
    results = run_checks(_original(), _run([_rank(0, files=[ckpt]), _rank(1, files=[ckpt])], 2), 2)
    writers = _by_name(results)["chief-writes"]
    assert not writers.passed and writers.measured == {"other_ranks": {"1": ["ckpt/model.h5"]}}
    assert writers.detail.startswith("only rank 0 may write checkpoints/summaries/models; rank 1 wrote checkpoint")


def test_tf_distribute_temporary_saves_must_be_removed():
    strategy = [{"class": "MultiWorkerMirroredStrategy", "num_workers": 2, "num_replicas_in_sync": 2}]
    kept = FileWrite("/work/ckpt/workertemp_1/model", "checkpoint", exists_at_exit=True, multi_worker_temp=True)
    removed = FileWrite("/work/ckpt/workertemp_1/model", "checkpoint", exists_at_exit=False, multi_worker_temp=True)
    chief = FileWrite("/work/ckpt/model", "checkpoint")
    ref = _original()
    bad = run_checks(ref, _run([_rank(0, files=[chief], strategies=strategy),
                                _rank(1, files=[kept], strategies=strategy)], 2, "tf-distribute"), 2)
    named = _by_name(bad)
    assert named["strategy-spans-workers"].passed and named["chief-writes"].passed
    assert not named["temp-files-removed"].passed
    assert reason_lines(bad.checks) == ["multi-worker temporary files were not removed: rank 1 left "
                                        "ckpt/workertemp_1/model"]
    good = run_checks(ref, _run([_rank(0, files=[chief], strategies=strategy),
                                 _rank(1, files=[removed], strategies=strategy)], 2, "tf-distribute"), 2)
    assert good.passed
    assert any(line.endswith("they removed (rank 1: 1 path(s))") for line in check_lines(good.checks))


def test_a_rank_without_a_record_fails_the_exit_codes():
    dist = _run([_rank(0), RankRecord.missing_rank(1, 2)], 2, returncode=1)
    exits = _by_name(run_checks(_original(), dist, 2))["exit-codes"]
    assert not exits.passed and exits.measured == {"ranks": {"0": 0, "1": None}, "launcher": 1}
    assert exits.detail == "rank 1 left no probe record (killed or crashed hard)"


def _curve(values, label):
    data = {"rank": 0, "size": 1, "exit_code": 0, "optimizer": {"steps": len(values)},
            "losses": {"steps": [[i, v] for i, v in enumerate(values)], "seen": len(values), "stride": 1}}
    return C.curve_of(SimpleNamespace(ranks=[RankRecord.from_json(data)], np=1, label=label, duration_s=1.0))


def test_the_loss_comparison_is_a_check_too():
    original = _curve([1.0] * 90 + [0.2] * 10, "original")
    same = loss_checks(C.compare(original, _curve([1.0] * 90 + [0.2] * 10, "converted")))
    assert [c.passed for c in same] == [True] and same[0].detail.startswith("learns like the original")
    diverged = loss_checks(C.compare(original, _curve([1.0] * 100, "converted")))
    assert diverged and not any(c.passed for c in diverged)
    assert all(c.name == "loss-within-tolerance" for c in diverged)
    assert reason_lines(diverged)[0].startswith("does not learn like the original: ")
    assert diverged[0].measured["ratio"] > diverged[0].expected["rel_tolerance"]


def _with_rates(record, *fits):
    record.fit_rates = [list(f) if isinstance(f, (list, tuple)) else f for f in fits]
    return record


def test_the_learning_rate_check_fails_an_unscaled_or_twice_scaled_rate_and_passes_the_policys():
    ref = _run([_with_rates(_rank(0, size=1, steps=20), [0.05], [0.01])], 1)

    def rate_check(*fits, factor=2.0, original=ref):
        dist = _run([_with_rates(_rank(0), *fits[:1]), _with_rates(_rank(1), *fits[1:])], 2)
        return _by_name(run_checks(original, dist, 2, rate_factor=factor)).get("learning-rate-scaled")

    assert rate_check([0.1], [0.1]).passed                      # linear: 0.05 x 2
    assert rate_check([0.05 * 2 ** 0.5], [0.05 * 2 ** 0.5], factor=2 ** 0.5).passed
    unscaled = rate_check([0.05], [0.05])
    assert not unscaled.passed and "0.05 x 2 = 0.1" in unscaled.detail and "rank 0: 0.05" in unscaled.detail
    twice = rate_check([0.1], [0.2])
    assert not twice.passed and "rank 1: 0.2" in twice.detail and "rank 0" not in twice.detail
    unread = rate_check([None], [0.1])
    assert not unread.passed and "rank 0: unread" in unread.detail
    # a GAN's fit steps two optimizers: both are checked, in the order they were built
    gan = _run([_with_rates(_rank(0, size=1, steps=20), [1e-3, 2e-3])], 1)
    assert rate_check([2e-3, 4e-3], [2e-3, 4e-3], original=gan).passed
    one_missed = rate_check([2e-3, 2e-3], [2e-3, 4e-3], original=gan)
    assert not one_missed.passed and "rank 0: 0.002, 0.002" in one_missed.detail
    # no factor (a conversion given as is, a warmup) or no fit in the original: nothing to check
    dist = _run([_with_rates(_rank(0), [0.05]), _with_rates(_rank(1), [0.05])], 2)
    assert "learning-rate-scaled" not in _by_name(run_checks(ref, dist, 2))
    assert "learning-rate-scaled" not in _by_name(run_checks(_original(), dist, 2, rate_factor=2.0))


def test_the_expected_rate_factor_follows_the_conversion_options():
    assert expected_rate_factor(Options(backend="horovod"), 4) == 4.0
    assert expected_rate_factor(Options(backend="horovod", lr_scaling="sqrt"), 4) == 2.0
    assert expected_rate_factor(Options(backend="tf-distribute", lr_scaling="none"), 4) == 1.0
    assert expected_rate_factor(Options(backend="horovod", warmup_epochs=1), 4) is None


def test_workers_that_crash_after_training_alone_are_still_told_their_strategy():
    """Two workers that each build a one-worker strategy train alone; they can
    then crash on each other's files (both save to one path). The span check
    must still say what they built, whichever rank the race made crash; a
    rank that crashed before building any strategy is not counted."""
    alone = [{"class": "MirroredStrategy", "num_workers": 1, "num_replicas_in_sync": 1}]
    for crashed in (0, 1):
        ranks = [_rank(r, strategies=alone, exit_code=1 if r == crashed else 0) for r in (0, 1)]
        span = _by_name(run_checks(_original(), _run(ranks, 2, "tf-distribute", returncode=1), 2))
        assert not span["strategy-spans-workers"].passed
        assert ("did not build a tf.distribute strategy spanning all 2 workers (rank 0: 1 worker(s), "
                "rank 1: 1 worker(s))") in span["strategy-spans-workers"].detail
    early = [_rank(0, exit_code=1), _rank(1, strategies=alone)]
    span = _by_name(run_checks(_original(), _run(early, 2, "tf-distribute", returncode=1), 2))
    assert span["strategy-spans-workers"].measured == {"1": 1}
