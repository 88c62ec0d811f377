"""Converted scripts train CORRECTLY: not only synchronised ranks, but the
right samples with the right labels, divided between the ranks.

Every ``tests/slow/correctness_scripts/*.py`` is converted with tfdist (no
WARNING-level finding allowed), run as written on 1 process and converted on
N processes (horovodrun, Gloo, CPU) under tfdist's probe, and checked:

* the original and every rank exit 0;
* all ranks hold bitwise-identical trainable variables;
* each rank ran ~1/N of the single-process optimizer steps, the same number
  on every rank;
* every Model.fit trains with the original's learning rate x N;
* the samples each rank trained on (recorded by the probe, with their values):
  every label is the one the script's ``label_of(sample)`` gives for its
  sample (recomputed here, for the original and for every rank); tfdist
  verify's sample checks pass (pairs as in the original run, work divided);
  with ``disjoint=yes`` no sample is read by two ranks within the first epoch;
  the ranks together cover at least ``coverage`` of the original's samples;
* only rank 0 wrote checkpoint/summary/model files (and the same kinds as the
  original).

Adding a script = dropping a file into correctness_scripts/.  Its contract:

* a module-level ``def label_of(sample)`` (it may use ``np``/``numpy`` and
  import what it needs inside): the label row the script feeds with that
  sample row; the script's labels must really be this function of its samples;
* a header comment line ``# tfdist-test: KEY=VALUE ...`` (all optional):
    ranks=2,3       numbers of ranks to run the conversion on (default 2)
    disjoint=yes    no sample in two ranks' first epoch (default yes; "no" for
                    samplers whose source tfdist cannot see, e.g. next_batch)
    coverage=0.9    fraction of the original's samples the ranks must cover
    standin=mnist   put tests/slow/support/<standin>_standin on PYTHONPATH
                    (``from tensorflow.examples.tutorials.mnist import input_data``);
                    standin=tfds: ``import tensorflow_datasets`` (no download)
    timeout=300     seconds for one run
    requires=matplotlib
                    modules the script imports beyond TensorFlow/NumPy: the case
                    is skipped (saying which) when the runtime lacks one
    rank0_files=gan_epoch_*.png
                    other files (glob on the name) the script writes: the
                    original must write some, rank 0 the same names, other
                    ranks none (checkpoint/summary/model files are always checked)
    split=random    the script splits its data at random without a seed (the
                    original run's split differs from the converted run's):
                    a rank's rows need not be ones the original trained on
                    (labels, pairs, disjointness and coverage still checked)
    steps=all       full-batch training: every step is one pass over the whole
                    data, split between the ranks, so each rank runs the
                    original's number of steps (default: 1/N of them)
    samples=none    the probe has no sample source for this loop (e.g. a
                    GradientTape loop inside a tf.function fed NumPy slices):
                    asserted, and the sample checks are skipped (exit,
                    variables, steps and files are still checked)
* it converts correctly with tfdist TODAY: shapes tfdist cannot yet convert
  belong elsewhere (e.g. correctness_scripts/known_bugs/, standin/).

Runs the original once per script and reuses it for every rank count.
Scripts: 92 (see correctness_scripts/); 3 ranks too for the 16 flagged ranks=2,3 -- one or two
of each source family where the share per rank depends on N (NumPy offsets, feed offsets,
derived labels, next_batch, samplers, an iterator's while loop, Keras fit on arrays, a
generator's stream shared out, a while loop walking offsets).
"""
from __future__ import annotations

import ast
import base64
import fnmatch
import importlib.util
import re
import sys
from dataclasses import dataclass
from pathlib import Path

import pytest

from tfdist.api import convert_file, convert_source
from tfdist.project.notebook import convert_notebook, notebook_script
from tfdist.runtime.verify import RankRecord, VerifyReport, check, check_samples, run_and_observe
from conftest import missing_stack

sys.path.insert(0, str(Path(__file__).resolve().parent.parent / "fast"))
from metamorphic import TRANSFORMS  # noqa: E402  (tests/fast/metamorphic.py: the variants)

pytestmark = pytest.mark.slow

HERE = Path(__file__).resolve().parent
CORRECTNESS = HERE / "correctness_scripts"
KNOWN_BUGS = CORRECTNESS / "known_bugs"
STANDIN_SCRIPTS = CORRECTNESS / "standin"
SUPPORT = HERE / "support"
#: standin=NAME puts these directories on PYTHONPATH: the MNIST tutorial module, and
#: tensorflow_datasets (synthetic data under real tfds names, see support/tensorflow_datasets).
STANDINS = {"mnist": SUPPORT / "mnist_standin", "tfds": SUPPORT}
SCRIPTS = sorted(CORRECTNESS.glob("*.py"))
HEADER = re.compile(r"^#\s*tfdist-test:\s*(.*)$")
#: The probe keeps the values of this many distinct rows so labels can be recomputed.
PROBE_ENV = {"TFDIST_PROBE_SAMPLE_VALUES": "200000", "TF_CPP_MIN_LOG_LEVEL": "2"}


@pytest.fixture(autouse=True)
def _needs_runtime(runtime_python):
    if runtime_python != sys.executable:
        missing_stack("run this module with the runtime environment's python")


# --------------------------------------------------------------------------
# Script contract: header flags and label_of
# --------------------------------------------------------------------------

@dataclass
class Flags:
    ranks: tuple[int, ...] = (2,)
    disjoint: bool = True
    coverage: float = 0.9
    standin: str | None = None
    timeout: float = 300.0
    requires: tuple[str, ...] = ()
    rank0_files: tuple[str, ...] = ()
    samples: bool = True
    random_split: bool = False
    full_batch: bool = False

    @property
    def pythonpath(self) -> list[Path]:
        return [STANDINS[self.standin]] if self.standin else []


def flags_of(script: Path) -> Flags:
    flags = Flags()
    for line in script.read_text(encoding="utf-8").splitlines()[:30]:
        m = HEADER.match(line.strip())
        if not m:
            continue
        for item in m.group(1).split():
            key, _, value = item.partition("=")
            if key == "ranks":
                flags.ranks = tuple(int(v) for v in value.split(",") if v)
            elif key == "disjoint":
                flags.disjoint = value.lower() in ("yes", "true", "1")
            elif key == "coverage":
                flags.coverage = float(value)
            elif key == "standin":
                if value not in STANDINS:
                    raise ValueError(f"{script.name}: unknown stand-in {value!r} (known: {sorted(STANDINS)})")
                flags.standin = value
            elif key == "timeout":
                flags.timeout = float(value)
            elif key == "requires":
                flags.requires = tuple(v for v in value.split(",") if v)
            elif key == "rank0_files":
                flags.rank0_files = tuple(v for v in value.split(",") if v)
            elif key == "split":
                if value != "random":
                    raise ValueError(f"{script.name}: split= takes only 'random', got {value!r}")
                flags.random_split = True
            elif key == "steps":
                if value != "all":
                    raise ValueError(f"{script.name}: steps= takes only 'all', got {value!r}")
                flags.full_batch = True
            elif key == "samples":
                if value != "none":
                    raise ValueError(f"{script.name}: samples= takes only 'none', got {value!r}")
                flags.samples = False
            else:
                raise ValueError(f"{script.name}: unknown tfdist-test flag {key!r}")
    return flags


def label_function(script: Path, flags: Flags):
    """The script's module-level ``label_of``, compiled alone (the script is not run)."""
    tree = ast.parse(script.read_text(encoding="utf-8"), str(script))
    defs = [n for n in tree.body if isinstance(n, ast.FunctionDef) and n.name == "label_of"]
    assert defs, f"{script.name} must define a module-level label_of(sample) (see this module's docstring)"
    import numpy

    for path in flags.pythonpath:
        if str(path) not in sys.path:
            sys.path.append(str(path))
    namespace = {"np": numpy, "numpy": numpy}
    exec(compile(ast.Module(body=defs, type_ignores=[]), str(script), "exec"), namespace)  # noqa: S102
    return namespace["label_of"]


#: TF1 step-loop scripts whose shape a sibling in the slow tier already runs on
#: 2 ranks (the budget's 2 cores); they run in the extended tier. Each names
#: the sibling that keeps its family in the slow tier.
TF1_SIBLINGS_EXTENDED = {
    "tf1_batch_helper_wrapped_one_hot": "tf1_batch_helper_loaded_in_with",  # a batch helper of the script's own
    "tf1_feed_offsets": "tf1_derived_labels_offsets",          # offsets into arrays, feed_dict
    "tf1_itertools_count": "tf1_while_true_break",             # endless loop, break on a count
    "tf1_monitored_feed": "monitored_next_batch_stop_hook",    # MonitoredTrainingSession fed batches
    "tf1_range_start_stop": "tf1_mnist_next_batch_range",      # range() step loops
    "tf1_train_loop_in_function": "tf1_train_op_in_class_method",  # the loop away from module level
    "tf1_while_step_counter": "tf1_while_true_break",          # while loops on a step counter
    "tf1_zip_range_batches": "tf1_nested_epoch_batches",       # batches zipped or nested in epochs
    "tf1_mnist_reshaped_batches_fed_rate": "tf1_mnist_next_batch_range",  # mnist.train.next_batch
    "tf1_random_split_choice_column_labels": "tf1_random_rows_transposed_columns",  # random rows
    "tf1_minibatch_list_unseeded_per_epoch": "tf1_helper_shuffles_unseeded",  # unseeded shuffles
    "tf1_feed_enumerated_stream": "tf1_sampler_function_split_stream",  # batches from a stream
    "tf1_train_ops_of_listed_instances": "tf1_train_op_in_class_method",  # train ops on objects
    "tf1_while_offsets_by_batch": "tf1_while_true_break",      # while loops
    "tf1_rows_unpacked_in_loop": "tf1_nested_epoch_batches",   # batches in epochs
    "tf1_slice_producer_in_helper": "tf1_queue_shuffle_batch",  # input queues
}


#: TF2 scripts of a shape only Keras 2 runs (the original itself fails on the
#: TF 2.21 stack, which test_training_correctness_tf_distribute.py asserts):
#: this engine, on TF 2.15, is the only one that runs them, in the slow tier.
#: script -> what the original's failure on Keras 3 says
KERAS2_ONLY: dict = {"keras_fit_rows_as_lists.py": "Unrecognized data type",  # Keras 3's fit takes no Python lists
                     "tape_one_optimizer_two_models.py": "keras.optimizers.legacy"}  # no legacy optimizers in Keras 3


def _tf1_alternates() -> dict:
    """The test budget (35 minutes on 2 cores): of the TF1 scripts left in
    the slow tier, two of every three by name run in the extended tier
    too (TF1 is the legacy API of 2026's users); the first of the three is
    their sibling."""
    kept = sorted(s.stem for s in SCRIPTS if s.name.startswith(("tf1_", "monitored_"))
                  and s.stem not in TF1_SIBLINGS_EXTENDED)
    return {kept[i]: kept[i - i % 3] for i in range(len(kept)) if i % 3}


#: script -> the variant of it (tests/fast/metamorphic.py: the same program written another
#: way) whose conversion the slow tier runs against the script's original; the script's own
#: conversion runs in the extended tier. The fast tier checks that a variant's conversion makes
#: the same edits at the same places; this checks that it trains correctly.
VARIANT_RUNS = {
    "tf1_feed_permutation.py": "main",
    "tape_one_optimizer_two_models.py": "cells",
    "tf1_queue_shuffle_batch.py": "temporaries",
    "keras_fit_rows_as_lists.py": "alias",
}


def cases():
    alternates = _tf1_alternates()
    out = []
    for script in SCRIPTS:
        for np_ in flags_of(script).ranks:
            # 3 ranks on the budget's 2 cores are oversubscribed and slow; the
            # N-dependent shares they check are checked at N=2 here and at
            # N=3 by test_examples_horovod's uneven-data run: the extended tier.
            # The TF2 scripts also run, converted for tf.distribute, in the slow
            # tier (test_training_correctness_tf_distribute.py); on Horovod (the
            # TF <= 2.15 engine) they run in the extended tier. TF1 scripts,
            # which only Horovod converts, stay in the slow tier, and so do the
            # TF2 scripts only Keras 2 runs.
            tf2 = not script.name.startswith(("tf1_", "monitored_")) and script.name not in KERAS2_ONLY
            moved = script.stem in TF1_SIBLINGS_EXTENDED or script.stem in alternates
            slow = not (np_ > 2 or tf2 or moved)
            kind = VARIANT_RUNS.get(script.name)
            out.append(pytest.param(script, np_, None, id=f"{script.stem}-np{np_}",
                                    marks=[] if slow and kind is None else [pytest.mark.extended]))
            if slow and kind is not None:
                out.append(pytest.param(script, np_, kind, id=f"{script.stem}-np{np_}-{kind}-variant"))
    return out


# --------------------------------------------------------------------------
# Runs
# --------------------------------------------------------------------------

_ORIGINALS: dict = {}


def run_env() -> dict:
    import os

    env = dict(os.environ)
    env.update(PROBE_ENV)
    return env


def original_run(script: Path, flags: Flags, tmp_path_factory):
    if script not in _ORIGINALS:
        base = tmp_path_factory.mktemp(f"{script.stem}-original")
        _ORIGINALS[script] = run_and_observe(script, 1, base / "run", flags.timeout, single=True, env=run_env(),
                                             pythonpath=flags.pythonpath, log_path=base / "original.log",
                                             label="original")
    return _ORIGINALS[script]


def converted_copy(script: Path, dest: Path, allow_warnings: bool = False, variant: str | None = None) -> Path:
    """The script converted (or its variant ``variant`` of tests/fast/metamorphic.py), in dest."""
    if variant is None:
        result = convert_file(script)
    else:
        made = TRANSFORMS[variant](script.read_text())
        assert made is not None, f"{variant} does not apply to {script.name}"
        if made.notebook:
            result = convert_notebook(str(script.with_suffix(".ipynb")), made.text.encode()).result
            if result.status == "converted":
                result.data = notebook_script(result.data).encode()
        else:
            result = convert_source(made.text.encode(), str(script))
    assert result.status == "converted", (result.status, result.error, result.error_line)
    # the header's steps=all says what the conversion reports (verify reads it from there)
    assert result.full_batch == flags_of(script).full_batch, \
        f"{script.name}: the conversion {'is' if result.full_batch else 'is not'} full-batch: fix its steps= flag"
    warnings = [f"{w.line}: {w.message}" for w in result.warnings if w.level == "WARNING"]
    if not allow_warnings:
        assert not warnings, f"{script.name}: tfdist warns, so it does not belong in correctness_scripts/: {warnings}"
    dest.mkdir(parents=True, exist_ok=True)
    out = dest / script.name
    out.write_bytes(result.data)
    return out


def distributed_run(script: Path, converted: Path, np_: int, flags: Flags, base: Path):
    return run_and_observe(converted, np_, base / "run", flags.timeout, single=False, as_file=script, env=run_env(),
                           pythonpath=flags.pythonpath, log_path=base / "distributed.log", label=f"{np_} ranks")


# --------------------------------------------------------------------------
# Sample checks recomputed from the recorded values
# --------------------------------------------------------------------------

def decode(values: dict, digest: str):
    import numpy as np

    v = values[digest]
    return np.frombuffer(base64.b64decode(v["b64"]), dtype=np.dtype(v["dtype"])).reshape(v["shape"])


def label_mismatches(rec: RankRecord, label_of) -> tuple[int, int, list[str]]:
    """(distinct (sample, label) pairs checked, mismatches, examples)."""
    import numpy as np

    stream = rec.sample_stream()
    assert stream is not None and stream.rows, f"rank {rec.rank}: the probe recorded no training samples"
    assert not stream.capped, f"rank {rec.rank}: sample recording was capped"
    values = rec.raw["samples"]["values"]
    checked, bad, examples = 0, 0, []
    for sample_h, labels_h in sorted(set(stream.rows)):
        assert labels_h, f"rank {rec.rank}: samples fed without labels ({stream.source})"
        assert sample_h in values and labels_h[0] in values, "row values missing (raise TFDIST_PROBE_SAMPLE_VALUES)"
        sample, fed = decode(values, sample_h), decode(values, labels_h[0])
        expected = np.asarray(label_of(sample))
        if fed.dtype.kind in "iub":
            same = expected.shape == fed.shape and np.array_equal(expected.astype(fed.dtype), fed)
        else:
            same = expected.shape == fed.shape and np.allclose(expected.astype(np.float64), fed.astype(np.float64),
                                                               rtol=1e-5, atol=1e-6)
        checked += 1
        if not same:
            bad += 1
            if len(examples) < 3:
                examples.append(f"label {fed.tolist()} fed, label_of gives {expected.tolist()}")
    return checked, bad, examples


def assert_trains_correctly(script: Path, flags: Flags, original, distributed, np_: int, samples_seen: bool = True):
    """``samples_seen=False``: the probe cannot see what each rank trained on
    under this engine (Keras fit under tf.distribute shards inside fit); the
    sample checks are skipped, everything else is checked."""
    name = script.name
    # Exit status.
    assert not original.timed_out and original.returncode == 0, original.tail[-20:]
    (ref,) = original.ranks
    assert ref.exit_code == 0 and not ref.missing, (ref.exit_code, ref.exception)
    assert not distributed.timed_out, f"{name} on {np_} ranks hung: {distributed.tail[-20:]}"
    ranks = distributed.ranks
    assert sorted(r.rank for r in ranks) == list(range(np_)), [r.rank for r in ranks]
    assert all(not r.missing and r.exit_code == 0 for r in ranks), [(r.rank, r.exit_code, r.exception) for r in ranks]
    assert distributed.returncode == 0, distributed.tail[-30:]
    assert all(r.size == np_ for r in ranks)

    # Identical variables on every rank.
    digests = {r.trainable_sha256 for r in ranks}
    assert ranks[0].trainable_count > 0 and len(digests) == 1, [(r.rank, r.trainable_sha256) for r in ranks]
    assert ranks[0].trainable_count == ref.trainable_count

    # 1/N of the steps, equal on every rank (uneven shards drop < N samples per epoch);
    # full-batch training (steps=all): every step of the original, on this rank's share.
    assert ref.optimizer_steps > 0
    expected = ref.optimizer_steps if flags.full_batch else ref.optimizer_steps / np_
    steps = [r.optimizer_steps for r in ranks]
    assert len(set(steps)) == 1, f"ranks ran different numbers of steps: {steps}"
    assert abs(steps[0] - expected) <= max(1.0, 0.1 * expected), (steps, ref.optimizer_steps)

    if not samples_seen:
        pass
    elif not flags.samples:
        # samples=none: the probe must really have no stream (else drop the flag).
        for rec in [ref, *ranks]:
            assert rec.sample_stream() is None, f"{name}: the probe recorded samples: remove samples=none"
    else:
        assert_samples(script, flags, ref, ranks, np_)

    # The whole verify check agrees (exit, variables, steps, learning rate, samples, writers).
    reasons, checks, _ = check(original, distributed, np_, rate_factor=float(np_), full_batch=flags.full_batch)
    assert reasons == [], reasons

    # Every Model.fit trains with the original's learning rate x N (linear
    # scaling), the first as verify checks it and any later one too: compiling
    # the same optimizer again must not scale it again.
    for rec in ranks:
        assert len(rec.fit_rates) == len(ref.fit_rates), (rec.fit_rates, ref.fit_rates)
        for got, original in zip(rec.fit_rates, ref.fit_rates):
            assert len(got) == len(original) and None not in got + original, (rec.fit_rates, ref.fit_rates)
            assert all(abs(g - o * np_) <= 1e-5 * o * np_ for g, o in zip(got, original)), (rec.fit_rates,
                                                                                         ref.fit_rates)

    # Only rank 0 wrote checkpoints/summaries/models, the same kinds as the original.
    writers = {r.rank for r in ranks if r.gated_files()}
    ref_kinds = {f.kind for f in ref.gated_files()}
    assert writers <= {0}, {r.rank: [f.path for f in r.gated_files()] for r in ranks}
    assert {f.kind for f in ranks[0].gated_files()} == ref_kinds

    # Other files named by rank0_files=: the original's names on rank 0, none elsewhere.
    if flags.rank0_files:
        def named(rec):
            return sorted({Path(f.path).name for f in rec.files
                           if any(fnmatch.fnmatch(Path(f.path).name, g) for g in flags.rank0_files)})

        wanted = named(ref)
        assert wanted, f"{name}: the original wrote no {flags.rank0_files} file"
        assert named(ranks[0]) == wanted, (named(ranks[0]), wanted)
        assert all(not named(r) for r in ranks[1:]), {r.rank: named(r) for r in ranks[1:]}


def assert_samples(script: Path, flags: Flags, ref, ranks, np_: int):
    name = script.name
    # Samples: the script's own label function holds for every pair fed.
    label_of = label_function(script, flags)
    for rec, who in [(ref, "original")] + [(r, f"rank {r.rank}") for r in ranks]:
        checked, bad, examples = label_mismatches(rec, label_of)
        assert checked > 0
        assert bad == 0, f"{name}: {who} fed {bad} of {checked} samples with wrong labels, e.g. {examples}"

    # tfdist verify's sample checks: pairs as in the original, divided, covered.
    result = check_samples(ref, ranks, np_)
    assert result["reasons"] == [], result["reasons"]
    summary = result["summary"]
    assert summary is not None, result["warnings"]
    assert any(c.startswith("sample/label pairs intact") for c in result["checks"]), result
    for rank, stats in summary["ranks"].items():
        if flags.random_split:
            break  # the original drew its own random split: a rank's rows need not be the original's
        assert stats["known"] == stats["distinct"], f"rank {rank} fed samples the original never fed: {stats}"
    if flags.disjoint:
        assert summary["first_epoch_overlap"] == 0, summary
    assert summary["coverage"] >= flags.coverage, summary


# --------------------------------------------------------------------------
# The suite
# --------------------------------------------------------------------------

def test_every_tf1_script_moved_to_the_extended_tier_has_a_sibling_here():
    names = {s.stem for s in SCRIPTS}
    for moved, sibling in TF1_SIBLINGS_EXTENDED.items():
        assert moved in names and sibling in names and sibling not in TF1_SIBLINGS_EXTENDED, (moved, sibling)


def test_suite_has_scripts():
    assert len(SCRIPTS) >= 25, [s.name for s in SCRIPTS]
    for script in SCRIPTS:
        flags = flags_of(script)
        assert flags.ranks and all(n >= 2 for n in flags.ranks), script.name
        label_function(script, flags)


@pytest.mark.timeout(900)
@pytest.mark.parametrize("script,np_,variant", cases())
def test_converted_script_trains_correctly(script, np_, variant, tmp_path, tmp_path_factory):
    flags = flags_of(script)
    missing = [m for m in flags.requires if importlib.util.find_spec(m) is None]
    if missing:
        missing_stack(f"{script.name} needs {', '.join(missing)} in the runtime environment")
    converted = converted_copy(script, tmp_path / "converted", variant=variant)
    original = original_run(script, flags, tmp_path_factory)
    distributed = distributed_run(script, converted, np_, flags, tmp_path)
    assert_trains_correctly(script, flags, original, distributed, np_)


# --------------------------------------------------------------------------
# The known silent bug: labels derived from already-sliced data
# --------------------------------------------------------------------------

@pytest.mark.timeout(600)
def test_verify_catches_labels_sliced_twice(tmp_path):
    """tf1_derived_labels_wrong_hvd.py (a wrong conversion reproduced by hand)
    exits 0 on both ranks with identical variables; only the sample check
    shows that the labels fed are not the samples' labels.  The hand-corrected
    conversion passes every check."""
    env, timeout = run_env(), 300
    original = run_and_observe(KNOWN_BUGS / "tf1_derived_labels.py", 1, tmp_path / "original", timeout,
                               single=True, env=env, label="original")
    wrong = run_and_observe(KNOWN_BUGS / "tf1_derived_labels_wrong_hvd.py", 2, tmp_path / "wrong", timeout,
                            single=False, env=env, label="wrong conversion")
    fixed = run_and_observe(KNOWN_BUGS / "tf1_derived_labels_fixed_hvd.py", 2, tmp_path / "fixed", timeout,
                            single=False, env=env, label="fixed conversion")

    # The wrong conversion runs "fine": exit 0, synchronised ranks.
    assert original.returncode == 0 and wrong.returncode == 0 and fixed.returncode == 0, wrong.tail[-20:]
    assert [r.exit_code for r in wrong.ranks] == [0, 0]
    assert len({r.trainable_sha256 for r in wrong.ranks}) == 1

    reasons, checks, warnings = check(original, wrong, 2)
    pairs = [r for r in reasons if r.startswith("sample/label pairs broken")]
    assert len(pairs) == 1, reasons
    # Recomputed independently from the recorded values with the scripts' label function.
    # n = 256 per rank: offsets (step * 32) % (256 - 32) feed the first 224 rows.
    for rec in wrong.ranks:
        checked, bad, _ = label_mismatches(rec, known_bug_label)
        assert checked == 224 and bad > 0.5 * checked, (rec.rank, checked, bad)
        assert f"rank {rec.rank} fed {bad} of {checked} samples with labels that are not theirs" in pairs[0], pairs[0]
    # n = labels.shape[0] was quartered: the steps check fails too.
    assert any(r.startswith("optimizer steps per rank are not ~1/2") for r in reasons), reasons
    report = VerifyReport(script="tf1_derived_labels.py", np=2, passed=False, reasons=reasons, checks=checks,
                          warnings=warnings, reference=original, distributed=wrong)
    assert "FAIL: sample/label pairs broken: rank 0 fed" in report.format_text()

    reasons, checks, warnings = check(original, fixed, 2)
    assert reasons == [], reasons
    assert any(c.startswith("sample/label pairs intact") for c in checks), checks
    assert any(c.startswith("work divided (tf1-feed)") for c in checks), checks
    for rec in fixed.ranks:              # n = 512: offsets % (512 - 32) feed the first 480 rows
        checked, bad, _ = label_mismatches(rec, known_bug_label)
        assert checked == 480 and bad == 0, (rec.rank, checked, bad)


@pytest.mark.timeout(600)
def test_verify_catches_tape_labels_sliced_with_another_stride(tmp_path):
    """The probe's tape source (eager GradientTape loop over NumPy slices):
    tape_numpy_labels_other_stride_wrong_hvd.py divides x_train by a rank
    stride and y_train in contiguous blocks.  It exits 0 with synchronised
    ranks and 1/2 of the steps each; only the sample/label pairs show the
    damage.  The hand-written correct conversion passes every check."""
    env, timeout = run_env(), 300
    script = CORRECTNESS / "tape_numpy_offsets_epochs.py"
    label_of = label_function(script, flags_of(script))
    original = run_and_observe(script, 1, tmp_path / "original", timeout, single=True, env=env, label="original")
    wrong = run_and_observe(KNOWN_BUGS / "tape_numpy_labels_other_stride_wrong_hvd.py", 2, tmp_path / "wrong",
                            timeout, single=False, env=env, label="wrong conversion")
    fixed = run_and_observe(KNOWN_BUGS / "tape_numpy_labels_other_stride_fixed_hvd.py", 2, tmp_path / "fixed",
                            timeout, single=False, env=env, label="fixed conversion")
    assert original.returncode == 0 and wrong.returncode == 0 and fixed.returncode == 0, wrong.tail[-20:]
    (ref,) = original.ranks
    # 480 samples / batch 20 x 2 epochs, every batch followed by an optimizer step.
    assert ref.optimizer_steps == 48 and ref.probe_errors == [], (ref.optimizer_steps, ref.probe_errors)
    ref_stream = ref.sample_stream()
    assert ref_stream.source == "tape" and len(ref_stream.rows) == 960 and len(ref_stream.distinct()) == 480
    assert label_mismatches(ref, label_of)[:2] == (480, 0)

    # The wrong conversion runs "fine": exit 0, synchronised ranks, 1/2 of the steps.
    assert [r.exit_code for r in wrong.ranks] == [0, 0]
    assert len({r.trainable_sha256 for r in wrong.ranks}) == 1
    assert [r.optimizer_steps for r in wrong.ranks] == [24, 24]
    reasons, checks, warnings = check(original, wrong, 2)
    assert len(reasons) == 1 and reasons[0].startswith("sample/label pairs broken"), reasons
    assert any(c.startswith("each rank took ~1/2 of the original's 48 optimizer steps") for c in checks), checks
    for rec in wrong.ranks:
        assert rec.sample_stream().source == "tape" and len(rec.sample_stream().rows) == 480
        # Recomputed independently from the recorded values with the script's label function:
        # 4 classes, so about 3/4 of the pairs carry another sample's label.
        checked, bad, _ = label_mismatches(rec, label_of)
        assert checked == 240 and bad > 0.5 * checked, (rec.rank, checked, bad)
        assert f"rank {rec.rank} fed {bad} of {checked} samples with labels that are not theirs" in reasons[0], reasons
    report = VerifyReport(script=script.name, np=2, passed=False, reasons=reasons, checks=checks,
                          warnings=warnings, reference=original, distributed=wrong)
    assert "FAIL: sample/label pairs broken: rank 0 fed" in report.format_text()

    reasons, checks, _ = check(original, fixed, 2)
    assert reasons == [], reasons
    assert any(c.startswith("sample/label pairs intact") for c in checks), checks
    assert any(c.startswith("work divided (tape)") for c in checks), checks
    result = check_samples(original.ranks[0], fixed.ranks, 2)
    assert result["summary"]["first_epoch_overlap"] == 0 and result["summary"]["coverage"] == 1.0, result["summary"]
    for rec in fixed.ranks:
        checked, bad, _ = label_mismatches(rec, label_of)
        assert checked == 240 and bad == 0, (rec.rank, checked, bad)


def known_bug_label(sample):
    """labels = (data[:, 0] * 1000).astype(np.int64) % 10, for one row."""
    import numpy as np

    return (np.asarray(sample[:1]) * 1000).astype(np.int64)[0] % 10


# --------------------------------------------------------------------------
# MNIST stand-in (tensorflow.examples.tutorials.mnist is gone from TF 2.x)
# --------------------------------------------------------------------------

@pytest.mark.timeout(300)
def test_mnist_standin_api_and_next_batch_semantics():
    import numpy as np

    path = str(STANDINS["mnist"])
    if path not in sys.path:
        sys.path.append(path)
    import tfdist_mnist_standin

    tfdist_mnist_standin.install()
    from tensorflow.examples.tutorials.mnist import input_data
    from tfdist_mnist_standin import label_of

    mnist = input_data.read_data_sets("/tmp/data/", one_hot=True, seed=11)
    assert mnist.train.num_examples == 1100 and mnist.validation.num_examples == 100
    assert mnist.train.images.shape == (1100, 784) and mnist.train.images.dtype == np.float32
    assert 0.0 <= mnist.train.images.min() and mnist.train.images.max() <= 1.0
    assert mnist.train.labels.shape == (1100, 10) and mnist.train.labels.dtype == np.float64
    assert mnist.test.images.shape == (200, 784) and mnist.test.labels.shape == (200, 10)
    for images, labels in [(mnist.train.images, mnist.train.labels), (mnist.test.images, mnist.test.labels)]:
        assert [label_of(i) for i in images] == list(labels.argmax(axis=1))
    assert len(set(mnist.train.labels.argmax(axis=1))) == 10
    plain = input_data.read_data_sets("/tmp/data/", reshape=False, dtype="uint8", validation_size=0)
    assert plain.train.images.shape == (1200, 28, 28, 1) and plain.train.images.dtype == np.uint8
    assert plain.train.labels.dtype == np.uint8

    # next_batch: shuffled with NumPy's global RNG, which DataSet seeds like TF's
    # original (seed=11 -> numpy.random.seed(11)), at the first batch and at each
    # epoch boundary, where the batch is completed from the new order.
    images0 = input_data.read_data_sets("/tmp/data/", one_hot=True).train.images   # unshuffled
    rng = np.random.RandomState(11)
    perm0, perm1 = np.arange(1100), np.arange(1100)
    rng.shuffle(perm0)
    rng.shuffle(perm1)
    first = images0[perm0]
    second = first[perm1]

    ds = input_data.read_data_sets("/tmp/data/", one_hot=True, seed=11).train
    got = [ds.next_batch(300) for _ in range(4)]   # 3 full batches, then 200 old + 100 new order
    assert np.array_equal(got[0][0], first[:300])
    assert np.array_equal(got[2][0], first[600:900])
    assert ds.epochs_completed == 1
    assert np.array_equal(got[3][0][:200], first[900:])
    assert np.array_equal(got[3][0][200:], second[:100])
    assert np.array_equal(ds.images, second)
    for images, labels in got:
        assert images.shape == (300, 784)
        assert [label_of(i) for i in images] == list(labels.argmax(axis=1))


@pytest.mark.timeout(600)
@pytest.mark.extended   # the slow tier's tf1_mnist_next_batch_range runs the stand-in under the probe on 2 ranks
def test_mnist_standin_runs_under_probe_and_horovodrun(tmp_path):
    """A tiny TF1 next_batch script imports the stand-in exactly as TF1
    tutorials do, single-process and converted on 2 ranks under the probe.
    tfdist gives each rank its own stream of batches (NumPy re-seeded by
    rank) and divides the steps: the sample check passes. The conversion
    without that re-seeding -- what tfdist produced before: steps divided
    only -- draws the same batches on every rank (read_data_sets(seed=3)
    seeds NumPy alike everywhere), and the sample check catches it (the
    steps check cannot)."""
    script = STANDIN_SCRIPTS / "tf1_mnist_next_batch.py"
    flags = flags_of(script)
    assert flags.standin == "mnist"
    converted = converted_copy(script, tmp_path / "converted")
    text = converted.read_text()
    seeding = "    np.random.seed(np.random.randint(2 ** 31 - 1) + hvd.rank())\n"
    assert text.count(seeding) == 1, text
    steps_only = tmp_path / "steps_only" / script.name
    steps_only.parent.mkdir()
    steps_only.write_text(text.replace(seeding, ""))
    env = run_env()
    original = run_and_observe(script, 1, tmp_path / "original", 300, single=True, env=env,
                               pythonpath=flags.pythonpath, label="original")
    assert original.returncode == 0 and original.ranks[0].exit_code == 0, original.tail[-20:]
    ref = original.ranks[0]
    assert ref.optimizer_steps == 20 and ref.sample_stream().source == "tf1-feed"
    assert len(ref.sample_stream().rows) == 2000
    label_of = label_function(script, flags)
    for path, label in ((converted, "tfdist's conversion"), (steps_only, "steps divided only")):
        distributed = run_and_observe(path, 2, tmp_path / label.replace(" ", "_").replace("'", ""), 300,
                                      single=False, as_file=script, env=env, pythonpath=flags.pythonpath, label=label)
        assert distributed.returncode == 0, distributed.tail[-20:]
        assert [r.exit_code for r in distributed.ranks] == [0, 0]
        for rec in [ref, *distributed.ranks]:
            checked, bad, examples = label_mismatches(rec, label_of)
            assert checked > 0 and bad == 0, (label, rec.rank, bad, examples)
        reasons, checks, _ = check(original, distributed, 2)
        assert any(c.startswith("each rank took ~1/2 of the original's 20 optimizer steps") for c in checks), checks
        assert any(c.startswith("sample/label pairs intact") for c in checks), checks
        if path is converted:
            assert reasons == [], reasons
        else:
            assert len(reasons) == 1 and reasons[0].startswith(
                "work not divided: every rank consumed the identical sequence of 1000 samples"), reasons
