"""Multi-input / multi-output NumPy data divided with its pairs intact, at
run time (Horovod, 2 ranks, TF 2.15).

``fit((X_wide, X_deep), [y_main, y_aux])``: tfdist slices every array of
the tuple and of the list with the same rows. The probe records, for every
batch ``fit`` is handed, each sample as the combined hash of its wide row
and deep row, and its labels as the combined hash of its two label rows.
The original on one process fed each sample with its own labels by
construction (``labels_of`` in the script); each rank must feed only
samples the original fed -- a wide row with the deep row of another sample
is a sample the original never fed -- each with the labels the original
fed it with, the two ranks' shares disjoint and together covering the
data. A conversion that slices the deep input with other rows than the wide
one exits 0 with synchronised ranks: the audit must report it (extended
tier: it costs a third run).
"""
from __future__ import annotations

import sys
from pathlib import Path

import pytest

from tfdist.api import convert_file
from tfdist.runtime.verify import check, check_samples, run_and_observe
from conftest import missing_stack

pytestmark = pytest.mark.slow

MULTI_INPUT = Path(__file__).resolve().parent / "correctness_scripts" / "multi_input"
SCRIPT = MULTI_INPUT / "keras_fit_wide_deep.py"
#: Two named inputs held by a name bound to a dict comprehension (training)
#: and to a dict literal (validation): each array sliced alike, by name.
NAMED_DICT_SCRIPT = MULTI_INPUT / "keras_fit_named_dict_inputs.py"
#: One output per time step: ``outputs = list(Y.swapaxes(0, 1))`` and a
#: comprehension over the steps for validation, each array sliced alike.
PER_STEP_OUTPUTS_SCRIPT = MULTI_INPUT / "keras_fit_outputs_per_timestep.py"
ENV = {"TF_CPP_MIN_LOG_LEVEL": "2"}


@pytest.fixture(autouse=True)
def _needs_runtime(runtime_python):
    if runtime_python != sys.executable:
        missing_stack("run this module with the runtime environment's python")


def _env():
    import os

    env = dict(os.environ)
    env.update(ENV)
    return env


_RUNS: dict = {}


def _original(tmp_path_factory, script=SCRIPT):
    if script not in _RUNS:
        base = tmp_path_factory.mktemp(script.stem + "-original")
        _RUNS[script] = run_and_observe(script, 1, base / "run", 300, single=True, env=_env(), label="original")
    return _RUNS[script]


def _converted_text(script=SCRIPT) -> str:
    result = convert_file(script)
    assert result.status == "converted", result.error
    assert not [w.message for w in result.warnings if w.level == "WARNING"]
    return result.data.decode()


def _audit(ref, ranks) -> list:
    """What is wrong with the ranks' (sample, labels) rows against the
    original's: samples it never fed (a wide row with another sample's deep
    row), samples fed with other labels, shares overlapping or not covering."""
    samples = check_samples(ref, ranks, 2)
    problems = list(samples["reasons"]) + list(samples["warnings"])
    for rank, seen in samples["summary"]["ranks"].items():
        if seen["unknown"] or seen["mispaired"]:
            problems.append(f"rank {rank}: {seen['unknown']} samples the original never fed, "
                            f"{seen['mispaired']} fed with other labels")
    if not any(c.startswith("sample/label pairs intact") for c in samples["checks"]):
        problems.append("pairs not checked")
    return problems


def _assert_pairs_kept_on_two_ranks(script, text, samples, tmp_path, tmp_path_factory):
    """Run the converted text on 2 ranks and the original on one: exit 0,
    every check of ``tfdist verify`` (variables, 1/N steps, samples
    divided), and the audit -- each rank fed samples/2 samples, every one of
    them a sample the original fed, with the original's labels."""
    converted = tmp_path / "converted" / script.name
    converted.parent.mkdir()
    converted.write_text(text)
    original = _original(tmp_path_factory, script)
    distributed = run_and_observe(converted, 2, tmp_path / "distributed", 300, single=False, as_file=script,
                                  env=_env(), label="2 ranks")
    assert original.returncode == 0 and distributed.returncode == 0, distributed.tail[-20:]
    (ref,) = original.ranks
    stream = ref.sample_stream()
    assert stream is not None and stream.source.startswith("keras-fit"), stream
    assert len(set(s for s, _ in stream.rows)) == samples  # every sample (all its inputs) distinct
    reasons, checks, _ = check(original, distributed, 2)  # exit, variables, 1/N steps, samples divided
    assert reasons == [], reasons
    assert _audit(ref, distributed.ranks) == []
    for rank in distributed.ranks:  # each rank fed half the samples, all of them the original's
        assert check_samples(ref, distributed.ranks, 2)["summary"]["ranks"][rank.rank]["known"] == samples // 2


@pytest.mark.timeout(400)
def test_wide_deep_tuple_inputs_keep_their_pairs_on_two_ranks(tmp_path, tmp_path_factory):
    text = _converted_text()
    for name in ("X_wide", "X_deep", "y_main", "y_aux", "X_valid_wide", "X_valid_deep"):
        assert f"{name}[hvd.rank()::hvd.size()][:len({name}) // hvd.size()]" in text, name
    _assert_pairs_kept_on_two_ranks(SCRIPT, text, 480, tmp_path, tmp_path_factory)


@pytest.mark.timeout(400)
def test_named_dict_inputs_keep_their_pairs_on_two_ranks(tmp_path, tmp_path_factory):
    """fit(x=features) with features a dict of arrays bound to a name: sliced
    array by array, by name (slicing the dict itself fails: TypeError)."""
    text = _converted_text(NAMED_DICT_SCRIPT)
    for name in ("features", "valid_inputs"):
        assert ("{name: rows[hvd.rank()::hvd.size()][:len(rows) // hvd.size()] for name, rows in "
                f"{name}.items()}}") in text, name
    _assert_pairs_kept_on_two_ranks(NAMED_DICT_SCRIPT, text, 480, tmp_path, tmp_path_factory)


@pytest.mark.timeout(400)
def test_one_output_per_step_held_in_a_list_keeps_its_pairs_on_two_ranks(tmp_path, tmp_path_factory):
    """fit([X, s0], outputs) with outputs = list(Y.swapaxes(0, 1)): Keras
    reads the list as one array per output, so each array is sliced with
    the inputs' rows (slicing the list would drop outputs: fit() fails)."""
    text = _converted_text(PER_STEP_OUTPUTS_SCRIPT)
    assert "[rows[hvd.rank()::hvd.size()][:len(rows) // hvd.size()] for rows in outputs]" in text
    assert "outputs[hvd.rank()::hvd.size()]" not in text
    _assert_pairs_kept_on_two_ranks(PER_STEP_OUTPUTS_SCRIPT, text, 384, tmp_path, tmp_path_factory)


@pytest.mark.extended
@pytest.mark.timeout(400)
def test_the_audit_catches_inputs_cut_apart(tmp_path, tmp_path_factory):
    """The same conversion with the deep input cut from other rows than the
    wide one: ranks synchronised, exit 0 -- and samples the original never
    fed, which the audit above reports."""
    text = _converted_text()
    good = "X_deep[hvd.rank()::hvd.size()]"
    assert good in text
    wrong = tmp_path / "wrong" / SCRIPT.name
    wrong.parent.mkdir()
    wrong.write_text(text.replace(good, "X_deep[::-1][hvd.rank()::hvd.size()]", 1))
    original = _original(tmp_path_factory)
    broken = run_and_observe(wrong, 2, tmp_path / "broken", 300, single=False, as_file=SCRIPT, env=_env(),
                             label="deep rows cut apart")
    assert broken.returncode == 0 and len({r.trainable_sha256 for r in broken.ranks}) == 1, broken.tail[-20:]
    problems = _audit(original.ranks[0], broken.ranks)
    assert any("never fed" in p for p in problems), problems
