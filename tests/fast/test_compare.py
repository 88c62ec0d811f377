"""The comparison behind `tfdist verify --compare`, on probe records made
here (no TensorFlow): curves, series per tape, the verdict and its
tolerance, the best policy of a sweep."""
import math
from types import SimpleNamespace

import pytest

from tfdist.options import Options
from tfdist.runtime import compare as C
from tfdist.runtime.verify import RankRecord, VerifyInputError, policy_options


def _record(rank, losses, steps, rows=None):
    data = {"rank": rank, "size": 1, "exit_code": 0, "optimizer": {"steps": steps}, "losses": losses}
    if rows:
        data["samples"] = {"batches": [{"source": "tf1-feed", "rows": [f"s{rank}-{i}:l" for i in range(rows)]}]}
    return RankRecord.from_json(data)


def _run(records, np=1, label="run"):
    return SimpleNamespace(ranks=records, np=np, label=label, duration_s=1.0)


def _steps(values):
    return {"steps": [[i, v] for i, v in enumerate(values)], "seen": len(values), "stride": 1}


def test_step_losses_are_averaged_over_ranks_and_judged_on_their_last_tenth():
    original = C.curve_of(_run([_record(0, _steps([1.0] * 90 + [0.2] * 10), 100)]))
    converted = C.curve_of(_run([_record(0, _steps([1.0] * 45 + [0.3] * 5), 50),
                                 _record(1, _steps([1.0] * 45 + [0.1] * 5), 50)], np=2))
    assert original.kind == converted.kind == "steps"
    assert original.final == pytest.approx(0.2) and converted.final == pytest.approx(0.2)
    assert converted.series[0][-1] == (1.0, pytest.approx(0.2))      # x: share of training
    result = C.compare(original, converted)
    assert result.passed and result.ratio == pytest.approx(1.0)


def test_two_tapes_per_step_make_two_series():
    interleaved = [v for pair in zip([0.7] * 20, [1.4] * 20) for v in pair]   # disc, gen, disc, gen...
    curve = C.curve_of(_run([_record(0, _steps(interleaved), 20)]))
    assert len(curve.series) == 2 and curve.finals == [pytest.approx(0.7), pytest.approx(1.4)]


@pytest.mark.parametrize("converted, passes", [
    (0.59, True),                # 0.5 + max(0.25 * 0.5, 0.05) = 0.625
    (0.63, False),
    (0.01, True),                # lower is never a failure
    (float("nan"), False),
    (float("inf"), False),
])
def test_the_tolerance_is_max_of_relative_and_absolute(converted, passes):
    a = C.Curve("original", "steps", series=[[(1.0, 0.5)]], finals=[0.5])
    b = C.Curve("converted", "steps", series=[[(1.0, converted)]], finals=[converted])
    result = C.compare(a, b)
    assert result.passed is passes, result.reasons
    if not passes:
        assert "tolerance" in result.reasons[0] or "diverged" in result.reasons[0]


def test_small_losses_use_the_absolute_floor_and_val_loss_is_judged_too():
    a = C.Curve("original", "fit", series=[[(1.0, 0.003)]], finals=[0.003],
                metrics={"val_loss": 0.003, "accuracy": 0.99})
    ok = C.Curve("converted", "fit", series=[[(1.0, 0.01)]], finals=[0.01],
                 metrics={"val_loss": 0.02, "accuracy": 0.2})      # accuracy is shown, not judged
    assert C.compare(a, ok).passed
    bad = C.Curve("converted", "fit", series=[[(1.0, 0.01)]], finals=[0.01], metrics={"val_loss": 0.21})
    reasons = C.compare(a, bad).reasons
    assert len(reasons) == 1 and reasons[0].startswith("the converted run's final val_loss 0.21 is worse")


def test_no_recorded_loss_is_a_failure_that_says_so():
    nothing = C.curve_of(_run([_record(0, None, 10)]))
    assert nothing.kind == "none"
    curve = C.Curve("original", "steps", series=[[(1.0, 0.5)]], finals=[0.5])
    assert C.compare(curve, nothing).reasons[0].startswith("cannot compare: the converted run recorded no")


def _fit_losses(epoch_losses, batches_per_epoch, batch_scale=1.0):
    batches, epochs = [], []
    for e, loss in enumerate(epoch_losses):
        for b in range(batches_per_epoch):
            batches.append([0, e, b, {"loss": loss * batch_scale}])
        epochs.append([0, e, {"loss": loss, "val_loss": loss + 0.1}])
    return {"steps": [], "seen": 0, "fit_batches": batches, "fit_epochs": epochs}


def test_fit_curves_run_over_epochs_and_end_at_the_last_epoch_log():
    curve = C.curve_of(_run([_record(0, _fit_losses([0.9, 0.5, 0.3], 4), 12)]))
    assert curve.kind == "fit" and curve.final == 0.3
    assert curve.metrics == {"val_loss": pytest.approx(0.4)}
    assert [x for x, _ in curve.series[0]][:4] == [0.25, 0.5, 0.75, 1.0] and curve.series[0][-1][0] == 3.0


def test_fit_batch_logs_that_disagree_with_the_epoch_logs_are_not_used():
    """tf-keras under MultiWorkerMirroredStrategy sums per-batch losses over
    the workers; its epoch logs are right."""
    curve = C.curve_of(_run([_record(r, _fit_losses([0.9, 0.5, 0.3], 4, batch_scale=2.0), 6) for r in (0, 1)],
                            np=2))
    assert curve.series == [[(1.0, 0.9), (2.0, 0.5), (3.0, 0.3)]] and "epoch logs" in curve.note


def test_samples_seen_sum_over_ranks():
    curve = C.curve_of(_run([_record(r, _steps([0.5] * 10), 10, rows=40) for r in (0, 1)], np=2))
    assert curve.samples_seen == 80
    assert C.x_axis([curve, curve])[0].startswith("samples seen")


def test_best_policy_is_the_closest_final_ratio_among_those_that_pass():
    original = C.Curve("original", "steps", series=[[(0.5, 1.0), (1.0, 0.5)]], finals=[0.5])

    def run(final, policy):
        c = C.Curve(policy, "steps", series=[[(0.5, 1.0), (1.0, final)]], finals=[final], policy=policy)
        return C.compare(original, c)

    results = [run(0.40, "linear"), run(0.58, "sqrt"), run(0.9, "none")]
    assert [r.passed for r in results] == [True, True, False]
    assert C.best_of(results).converted.policy == "sqrt"          # |1.16 - 1| < |0.8 - 1|
    assert C.best_of([run(0.9, "none"), run(1.5, "x")]).converted.policy == "none"   # none pass: still named


def test_curve_gap_is_relative_and_infinite_when_a_curve_diverges():
    a = C.Curve("a", "steps", series=[[(0.0, 1.0), (1.0, 1.0)]], finals=[1.0])
    b = C.Curve("b", "steps", series=[[(0.0, 1.1), (1.0, 1.1)]], finals=[1.1])
    assert C.curve_gap(a, b) == pytest.approx(0.1)
    c = C.Curve("c", "steps", series=[[(0.0, 1.0), (1.0, math.nan)]], finals=[math.nan])
    assert C.curve_gap(a, c) == math.inf
    # a loss falling to ~0: the distance there is relative to 1% of the curve's top, not to ~0
    falling = C.Curve("o", "steps", series=[[(0.0, 1.0), (1.0, 0.0)]], finals=[0.0])
    near = C.Curve("n", "steps", series=[[(0.0, 1.0), (1.0, 0.001)]], finals=[0.001])
    assert C.curve_gap(falling, near) < 0.1


def test_policy_specs():
    assert policy_options("linear") == Options(backend="horovod")
    assert policy_options("sqrt", backend="tf-distribute") == Options(backend="tf-distribute", lr_scaling="sqrt")
    assert policy_options("linear:warmup=2", 50) == Options(backend="horovod", warmup_epochs=2, steps_per_epoch=50)
    assert policy_options("sqrt", 50) == Options(backend="horovod", lr_scaling="sqrt")  # no warmup: no epoch length
    for bad in ("cubic", "linear:warmup=0", "linear:decay=2", "none:warmup=2"):
        with pytest.raises(VerifyInputError):
            policy_options(bad)


def test_the_table_shows_both_runs_side_by_side():
    a = C.Curve("original, 1 process", "fit", series=[[(1.0, 0.5)]], finals=[0.5], metrics={"accuracy": 0.8},
                steps=10, samples_seen=None, wall_s=2.0)
    b = C.Curve("linear, 2 ranks", "fit", series=[[(1.0, 0.45)]], finals=[0.45], metrics={"accuracy": 0.82},
                steps=5, wall_s=3.0)
    lines = C.format_table([C.compare(a, b)])
    assert "accuracy" in lines[0] and "final loss" in lines[0]
    assert lines[1].split()[:5] == ["original,", "1", "process", "0.5000", "-"]
    assert lines[2].split()[3:6] == ["0.4500", "0.900", "10.0%"] and lines[2].endswith("PASS")


def test_horovod_fit_batch_logs_agree_with_rank_averaged_epoch_logs():
    """MetricAverageCallback averages the epoch logs over the ranks: each
    rank's own last batch log differs, their mean does not."""
    a = _fit_losses([0.9, 0.5], 4, batch_scale=0.8)
    b = _fit_losses([0.9, 0.5], 4, batch_scale=1.2)
    curve = C.curve_of(_run([_record(0, a, 4), _record(1, b, 4)], np=2))
    assert len(curve.series[0]) == 8 and curve.note is None


def test_a_pass_by_the_absolute_floor_only_is_marked():
    a = C.Curve("original, 1 process", "steps", series=[[(1.0, 0.002)]], finals=[0.002])
    b = C.Curve("linear, 4 ranks", "steps", series=[[(1.0, 0.027)]], finals=[0.027])
    result = C.compare(a, b)
    assert result.passed and result.floor_only and result.to_dict()["floor_only"] is True
    lines = C.format_table([result])
    assert lines[2].endswith("PASS*") and lines[-1].startswith("  PASS*: more than 0.25 x")
    assert not C.compare(a, C.Curve("c", "steps", series=[[(1.0, 0.0024)]], finals=[0.0024])).floor_only
