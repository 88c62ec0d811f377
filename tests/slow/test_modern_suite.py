"""The modern runtime suite: scripts and notebooks written for this project
in the shapes of current public Keras 3 / TensorFlow 2.16+ tutorials and
books (tests/slow/modern/), each converted with ``--backend tf-distribute``
and run on TensorFlow 2.21 (the project's tf-distribute stack) three ways:

* the original, as written, on one process;
* the conversion as 2 ``TF_CONFIG`` workers (MultiWorkerMirroredStrategy);
* the conversion as ONE process whose CPU is split into 2 logical devices
  (MirroredStrategy, as on a host with 2 GPUs: verify --local-devices 2).

Each (item, strategy) is one test, the original run beside the converted
one. The slow tier runs every item on one strategy, alternating along the
sorted items (both strategies meet every family of shapes); the other
strategy, and both for an item whose family a sibling covers, run in the
extended tier (the test budget's 2 cores).

Each distributed run must pass what ``tfdist verify --compare`` checks:
exit 0, the strategy spanning the workers / replicating over both devices,
bitwise-identical variables (across workers; across the devices' copies),
about half the original's optimizer steps (the global batch is twice as
large), samples divided and paired where the probe sees them, files at the
user's paths written once, and a final loss within the tolerance
``verify --compare`` states.

A notebook runs as the script its code cells make, top to bottom (line
magics, which only IPython runs, are commented out in both runs); it is
converted as a notebook, then its converted cells run the same way.

Metamorphic runs: for a few items (VARIANT_RUNS) the slow tier runs, in
that item's strategy, the conversion of a variant of it instead (the same
program written another way, made by tests/fast/metamorphic.py: an import
alias, the tail in ``main()``, ``x += y`` for ``x = x + y``, numbers bound
to temporaries, the script split into notebook cells, a method chain one
call a statement, a call read once given in its place, imported names read
through their module), against the item's
original as written; the item's own conversion runs there in the extended
tier. The fast tier checks that a variant's conversion makes the same edits
at the same places; this checks that it trains like the original.

Items the engine refuses are listed with the reason (the refusal itself is
asserted, so the list cannot go stale).
"""
from __future__ import annotations

import json
import os
import sys
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

import pytest

from tfdist.api import convert_file, convert_source
from tfdist.project.notebook import convert_notebook, notebook_script
from tfdist.runtime import compare as C
from tfdist.runtime.verify import check, run_and_observe

from test_training_correctness import run_env
from conftest import missing_stack

sys.path.insert(0, str(Path(__file__).resolve().parent.parent / "fast"))
from metamorphic import TRANSFORMS  # noqa: E402  (tests/fast/metamorphic.py: the variants)

pytestmark = pytest.mark.slow

TF_DISTRIBUTE = "tf-distribute"
VENV = os.environ.get("TFDIST_TF_DISTRIBUTE_VENV")
MODERN = Path(__file__).resolve().parent / "modern"
ITEMS = sorted(MODERN.glob("*.py")) + sorted(MODERN.glob("*.ipynb"))
#: (label, processes, devices per process)
MODES = [("2 MultiWorkerMirrored workers", 2, 1), ("MirroredStrategy, 1 process x 2 devices", 1, 2)]
TIMEOUT = 300
#: items this engine refuses, and why (asserted)
REFUSED: dict[str, str] = {}
#: item -> (mode, message): runs that fail in a library whatever the conversion,
#: asserted to fail so (an entry that stops failing makes the test fail: remove it).
#: tf-keras 2.21 (what a tf.keras fit script runs on as TF_CONFIG workers) loads a
#: .weights.h5 file by assigning h5py datasets to the variables; a sync-on-read
#: metric variable under MultiWorkerMirroredStrategy first divides the value by
#: the replicas, which an h5py Dataset does not support (measured; Keras 3 under
#: MirroredStrategy loads the same file).
#: item -> the one warning its conversion must give (asserted): a file ModelCheckpoint writes
#: on the chief only, read back by every worker (shared storage needed across hosts)
WARNED: dict[str, str] = {
    "keras_checkpoint_csvlogger_callbacks.py": "is what tf.keras.callbacks.ModelCheckpoint (line 24) writes",
    "nb_functional_checkpoint_cells.ipynb": "is what keras.callbacks.ModelCheckpoint (line 21) writes",
}
UPSTREAM_FAILURES: dict[str, tuple[str, str]] = {
    "keras_checkpoint_csvlogger_callbacks.py": (
        "2 MultiWorkerMirrored workers", "unsupported operand type(s) for /: 'Dataset' and 'int'"),
}


def _python() -> str:
    if not VENV:
        missing_stack("TFDIST_TF_DISTRIBUTE_VENV is not set (scripts/test.sh sets it to the TF 2.21 stack)")
    return str(Path(VENV) / "bin" / "python")


#: item -> the variant whose conversion the slow tier runs in the item's strategy (against
#: the item's original); one of each transformation, on Keras fit, a train_step and tape loops
VARIANT_RUNS = {
    "keras3_gan_custom_train_step.py": "augmented",
    "tape_training_loop_from_scratch.py": "main",
    "keras_cnn_sequential_add_validation.py": "cells",
    "keras_multi_input_functional.py": "alias",
    "keras_lstm_timeseries_windows.py": "temporaries",
    "tape_raw_variables_linear.py": "comments",
    "keras_subclassed_model_dataset.py": "chains",
    "keras_transfer_learning_fine_tune.py": "inlined",
    "keras_imagedatagenerator_flow.py": "qualified",
}


def _convert_variant(item: Path, kind: str, tmp_path: Path) -> tuple[Path, Path, object]:
    """(original script, the variant's converted script, the conversion's FileResult)."""
    variant = TRANSFORMS[kind](item.read_text())
    assert variant is not None, f"{kind} does not apply to {item.name}"
    (tmp_path / "converted").mkdir()
    converted = tmp_path / "converted" / item.name
    if variant.notebook:
        result = convert_notebook(str(item.with_suffix(".ipynb")), variant.text.encode(), backend=TF_DISTRIBUTE).result
        if result.status == "converted":
            converted.write_text(notebook_script(result.data), encoding="utf-8")
    else:
        result = convert_source(variant.text.encode(), str(item), backend=TF_DISTRIBUTE)
        if result.status == "converted":
            converted.write_bytes(result.data)
    return item, converted, result


def _convert(item: Path, tmp_path: Path) -> tuple[Path, Path, object]:
    """(original script, converted script, the conversion's FileResult)."""
    (tmp_path / "converted").mkdir()
    if item.suffix == ".ipynb":
        data = item.read_bytes()
        nb = convert_notebook(str(item), data, backend=TF_DISTRIBUTE)
        result = nb.result
        original = tmp_path / (item.stem + ".py")
        original.write_text(notebook_script(data), encoding="utf-8")
        converted = tmp_path / "converted" / original.name
        if result.status == "converted":
            converted.write_text(notebook_script(result.data), encoding="utf-8")
        return original, converted, result
    result = convert_file(item, backend=TF_DISTRIBUTE)
    converted = tmp_path / "converted" / item.name
    if result.status == "converted":
        converted.write_bytes(result.data)
    return item, converted, result


def test_suite_is_large_enough():
    assert len([i for i in ITEMS if i.suffix == ".py"]) >= 20
    assert len([i for i in ITEMS if i.suffix == ".ipynb"]) >= 5


#: Items whose shape a sibling in the slow tier already runs on both
#: strategies: they run in the extended tier (the test budget's 2 cores).
#: Each names the sibling that keeps its family in the slow tier.
SIBLINGS_EXTENDED = {
    "keras_class_weight_imbalanced.py": "keras_cnn_sequential_add_validation.py",   # fit on arrays, one extra argument
    "keras_text_embedding_pooling.py": "keras_cnn_sequential_add_validation.py",    # Sequential fit on arrays
    "keras_functional_regression_early_stopping.py": "nb_functional_checkpoint_cells.ipynb",  # fit with callbacks
    "keras_imagedatagenerator_flow_inline.py": "keras_imagedatagenerator_flow.py",  # ImageDataGenerator.flow
    "keras_save_and_reload.py": "nb_functional_checkpoint_cells.ipynb",             # saves and reloads
    "keras3_import_keras_fit.py": "five_cells_fit.ipynb",                           # import keras; fit
    "nb_dataset_performance_cells.ipynb": "nb_cnn_add_compile_fit_cells.ipynb",     # a notebook's fit on tf.data
    "keras_augmentation_layers.py": "keras_normalization_adapt.py",                 # preprocessing layers in the model
    "keras_sequence_subclass_reshuffled.py": "keras3_pydataset_fit.py",             # fit on a Sequence / PyDataset
    "tape_advanced_quickstart_metrics.py": "nb_tape_quickstart_cells.ipynb",        # the tape quickstart
    "tape_autoencoder_enumerate.py": "tape_training_loop_from_scratch.py",          # a tape loop over a dataset
    "keras_quickstart_mnist_shape.py": "keras_cnn_sequential_add_validation.py",    # Sequential fit on arrays
    "keras_checkpoint_csvlogger_callbacks.py": "nb_functional_checkpoint_cells.ipynb",  # checkpoints from fit
    "keras_exponential_decay_schedule.py": "keras_cnn_sequential_add_validation.py",  # fit on arrays (schedules:
                                                                                     # test_scaled_schedule_runtime)
    "keras_generator_steps.py": "keras3_pydataset_fit.py",                          # fit on batches made in Python
    "keras3_autoencoder_fit_inputs_only.py": "keras_cnn_sequential_add_validation.py",  # fit on arrays
}


#: mode ids in test names
MODE_IDS = {MODES[0]: "workers", MODES[1]: "devices"}


def _slow_mode(index: int, item: Path):
    """The mode an item runs in the slow tier: the two alternate along the
    sorted items (each strategy meets every family of shapes across the
    suite); an item a library fails in one mode runs the other there."""
    known = UPSTREAM_FAILURES.get(item.name)
    if known is not None:
        return next(m for m in MODES if m[0] != known[0])
    return MODES[index % 2]


def _params():
    """(item, mode) for both modes of every item: one in the slow tier, the
    other -- and both of a sibling's item -- in the extended tier (the test
    budget's 2 cores; `bash scripts/test.sh extended` runs them)."""
    out = []
    for index, item in enumerate(ITEMS):
        for mode in MODES:
            slow = item.name not in SIBLINGS_EXTENDED and mode == _slow_mode(index, item)
            kind = VARIANT_RUNS.get(item.name)
            out.append(pytest.param(item, mode, None, id=f"{item.name}-{MODE_IDS[mode]}",
                                    marks=[] if slow and kind is None else [pytest.mark.extended]))
            if slow and kind is not None:
                out.append(pytest.param(item, mode, kind, id=f"{item.name}-{MODE_IDS[mode]}-{kind}-variant"))
    return out


def test_every_item_moved_to_the_extended_tier_has_a_sibling_here():
    names = {i.name for i in ITEMS}
    for moved, sibling in SIBLINGS_EXTENDED.items():
        assert moved in names and sibling in names and sibling not in SIBLINGS_EXTENDED, (moved, sibling)


def test_both_strategies_run_in_the_slow_tier_and_every_item_in_one():
    slow = [p.values for p in _params() if not p.marks]
    assert {mode for _, mode, _kind in slow} == set(MODES)
    assert sorted(item.name for item, _, _kind in slow) == sorted(i.name for i in ITEMS if i.name not in SIBLINGS_EXTENDED)


def test_the_slow_tier_runs_every_transformation_once():
    slow = [p.values for p in _params() if not p.marks]
    kinds = [kind for _, _, kind in slow if kind is not None]
    assert sorted(kinds) == sorted(TRANSFORMS) and len(kinds) == len(VARIANT_RUNS)
    assert {mode for _, mode, kind in slow if kind is not None} == set(MODES)


@pytest.mark.parametrize("item, mode, variant", _params())
def test_modern_item_trains_like_the_original(item, mode, variant, tmp_path):
    python = _python()
    original_script, converted_script, result = (
        _convert(item, tmp_path) if variant is None else _convert_variant(item, variant, tmp_path))
    if item.name in REFUSED:
        assert result.status == "unsupported" and REFUSED[item.name] in result.error, (result.status, result.error)
        return
    assert result.status == "converted", (result.status, result.error, result.error_line)
    warnings = [f"{w.line}: {w.message}" for w in result.warnings if w.level == "WARNING"]
    expected = WARNED.get(item.name)
    assert [w for w in warnings if expected is None or expected not in w] == [], warnings
    assert expected is None or any(expected in w for w in warnings), warnings
    common = dict(env=run_env(), backend=TF_DISTRIBUTE, python=python, record_losses=True)

    def original_run():
        return run_and_observe(original_script, 1, tmp_path / "original", TIMEOUT, single=True,
                               log_path=tmp_path / "original.log", label="original", **common)

    def distributed_run(label, np_, devices):
        run_dir = tmp_path / label.split(",")[0].replace(" ", "-")
        return run_and_observe(converted_script, np_, run_dir, TIMEOUT, single=devices > 1,
                               as_file=original_script, local_devices=devices,
                               log_path=run_dir.with_suffix(".log"), label=label, **common)

    # the original beside the distributed run (the runs share nothing)
    with ThreadPoolExecutor(max_workers=1) as pool:
        pending = pool.submit(distributed_run, *mode)
        original = original_run()
        distributed = pending.result()
    assert original.returncode == 0 and not original.timed_out, original.tail[-30:]
    label, np_, devices = mode
    reasons, checks, _ = check(original, distributed, np_, backend=TF_DISTRIBUTE, local_devices=devices)
    comparison = C.compare(C.curve_of(original), C.curve_of(distributed, label))
    reasons += [f"does not learn like the original: {r}" for r in comparison.reasons]
    if not any("bitwise-identical" in c for c in checks) or not any("of the original's" in c for c in checks):
        reasons.append(f"variables or steps were not checked: {checks}")
    known = UPSTREAM_FAILURES.get(item.name)
    if known is not None and known[0] == label:
        assert any(known[1] in line for line in reasons + distributed.tail), \
            [f"no longer fails with {known[1]!r}: remove it from UPSTREAM_FAILURES"] + reasons
        return
    assert not reasons, json.dumps({label: reasons + distributed.tail[-15:]}, indent=1)


_BROKEN_MIRRORED = '''
import numpy as np
import tensorflow as tf

x = np.random.default_rng(0).random((256, 4)).astype("float32")
y = x.sum(axis=1, keepdims=True)
strategy = tf.distribute.MirroredStrategy({devices})
with strategy.scope():
    model = tf.keras.Sequential([tf.keras.Input(shape=(4,)), tf.keras.layers.Dense(1)])
    model.compile(optimizer=tf.keras.optimizers.SGD(0.05 * strategy.num_replicas_in_sync), loss="mse")
model.fit(x, y, batch_size=16 * strategy.num_replicas_in_sync, epochs=2, verbose=0)
{after}
'''


@pytest.mark.parametrize("devices, after, reason", [
    # the strategy pinned to one device: it does not replicate over the host's two
    ('["/cpu:0"]', "", "the strategy does not replicate over all 2 devices"),
    # one device's copy of the kernel changed behind the strategy's back
    ("", "kernel = getattr(model.layers[0].kernel, 'value', model.layers[0].kernel)  # Keras 3 holds the tf.Variable\n"
         "kernel.values[1].assign_add(tf.ones_like(kernel.values[1]))",
     "the replicas' copies of trainable variables differ within a process"),
])
def test_local_devices_catch_a_strategy_that_is_not_replicated(devices, after, reason, tmp_path):
    """verify --local-devices fails a conversion that runs one replica, or
    whose per-device copies diverge (the checks can fail)."""
    from tfdist.runtime.verify import verify_script

    python = _python()
    original = tmp_path / "original.py"
    original.write_text(_BROKEN_MIRRORED.format(devices="", after="").replace(
        "strategy = tf.distribute.MirroredStrategy()", "strategy = tf.distribute.get_strategy()"))
    converted = tmp_path / "converted.py"
    converted.write_text(_BROKEN_MIRRORED.format(devices=devices, after=after))
    report = verify_script(converted, np=1, converted=True, original=original, backend=TF_DISTRIBUTE,
                           python=python, env=run_env(), local_devices=2, timeout=TIMEOUT)
    assert not report.passed
    assert any(r.startswith(reason) for r in report.reasons), report.reasons
