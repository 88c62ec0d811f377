"""Who divides a loss by the replicas under --backend tf-distribute, by what
the model learns (issue 39, point 4).

Each script (tests/slow/loss_shares/) trains on 256 rows in batches of 128
with plain SGD, a loss of a shape tfdist refused or divided wrongly before:

- ``tape_helper_loss_object``: a tape loop whose loss is a Keras Loss
  object's value returned by a helper function. Keras 3 divides it by the
  replicas itself; the conversion divided it again (gradients half as large
  on 2 replicas, exit 0).
- ``train_step_sum_added_in_place``: a ``train_step`` whose loss is a sum
  over the batch with a second sum added by ``+=``; refused before.
- ``train_step_compute_average_loss``: ``tf.nn.compute_average_loss``
  (divides by the global batch itself); refused before.
- ``train_step_distilled_terms_reported`` (stop 42): two Keras Loss
  objects handed to the model's own compile(), averaged into the loss and
  each reported by a metric: divided by Keras, multiplied back only where
  reported; refused before.
- ``train_step_compiled_loss_function`` (stop 42): ``self.loss`` -- what
  compile(loss=...) got through an override forwarding ``**kwargs`` -- a
  Keras loss function, averaged by the step: divided once; refused before.
- ``train_step_loss_subclass_own_number`` (stop 43): a Loss subclass whose
  call() returns one number of its own: Keras 3 returns a scalar as it is,
  undivided: divided once; kept as Keras-divided before (N times the
  gradient: trained wrong).
- ``train_step_own_mean_added`` (stop 43): compute_loss plus a mean of the
  step's own: the added term divided; refused before.
- ``train_step_unreduced_compiled_loss`` (stop 43): compile(loss=...
  reduction="none") averaged by the step: divided once; refused before.
- ``tape_assign_sub_by_hand``: tf.Variables updated by hand
  (``w.assign_sub(RATE * dw)``, ``b.assign(b - RATE * db)``), no optimizer
  to sum the replicas' gradients; refused before.

Converted, the global batch is the whole data set, so on 1 process x 2
devices (MirroredStrategy, Keras 3) the run must end with the weights one
process ends with on batches of 256 (atol 1e-4): at the scaled rate for a
mean, at the original rate for a sum (a sum over twice the rows is already
twice as large). Can the check fail? The same conversion with the division
by the replicas turned around (added where Keras divides, removed where it
does not) must end elsewhere: asserted.
"""
from __future__ import annotations

import re
from pathlib import Path

import numpy as np
import pytest

from tfdist.api import convert_file
from test_gradient_clipping_runtime import DEVICES, _run, _venv, _weights, _write

pytestmark = pytest.mark.slow

HERE = Path(__file__).resolve().parent / "loss_shares"
DIVIDED = "/ strategy.num_replicas_in_sync"
#: script -> (the reference's constants, the mutant's edit of the conversion)
CASES = {
    "tape_helper_loss_object": ("BATCH, RATE = 256, 0.1", ("scaled_loss = loss\n", f"scaled_loss = loss {DIVIDED}\n")),
    "train_step_sum_added_in_place": ("BATCH, RATE = 256, 0.0001",
                                      (f"scaled_loss = loss {DIVIDED}\n", "scaled_loss = loss\n")),
    "train_step_compute_average_loss": ("BATCH, RATE = 256, 0.1",
                                        ("scaled_loss = loss\n", f"scaled_loss = loss {DIVIDED}\n")),
    "tape_assign_sub_by_hand": ("BATCH, RATE = 256, 0.1", (f"scaled_loss = loss {DIVIDED}\n", "scaled_loss = loss\n")),
    # the terms multiplied back before the loss is made of them: N times the gradient
    "train_step_distilled_terms_reported": ("BATCH, RATE = 256, 0.1", (
        "loss = (student_loss + distill_loss) / 2\n",
        "loss = (student_loss * strategy.num_replicas_in_sync + distill_loss * strategy.num_replicas_in_sync) / 2\n")),
    "train_step_compiled_loss_function": ("BATCH, RATE = 256, 0.1",
                                          (f"scaled_loss = loss {DIVIDED}\n", "scaled_loss = loss\n")),
    "train_step_loss_subclass_own_number": ("BATCH, RATE = 256, 0.1",
                                            (f"scaled_loss = loss {DIVIDED}\n", "scaled_loss = loss\n")),
    "train_step_own_mean_added": ("BATCH, RATE = 256, 0.1", (f"0.5 * tf.reduce_mean(tf.abs(pred - yb)) {DIVIDED}",
                                                             "0.5 * tf.reduce_mean(tf.abs(pred - yb))")),
    "train_step_unreduced_compiled_loss": ("BATCH, RATE = 256, 0.1",
                                           (f"scaled_loss = loss {DIVIDED}\n", "scaled_loss = loss\n")),
}
#: the test budget's 2 cores: a train_step under fit runs in the slow tier as
#: train_step_sum_added_in_place; this one runs in the extended tier
EXTENDED = {"train_step_compute_average_loss", "train_step_compiled_loss_function",
            # a division where Keras does not divide under fit: train_step_loss_subclass_own_number runs in
            # the slow tier
            "train_step_own_mean_added", "train_step_unreduced_compiled_loss",
            # a loss share compared exactly: train_step_sum_added_in_place runs in the slow tier
            "tape_assign_sub_by_hand", "tape_helper_loss_object",
            # terms Keras divides beside terms it does not (stop 44, the budget): train_step_loss_subclass_own_number
            # and train_step_sum_added_in_place run in the slow tier
            "train_step_distilled_terms_reported"}


def test_every_script_has_a_case():
    assert sorted(p.stem for p in HERE.glob("*.py")) == sorted(CASES)


@pytest.mark.timeout(900)
@pytest.mark.parametrize("name", [pytest.param(n, id=n, marks=[pytest.mark.extended] if n in EXTENDED else [])
                                  for n in CASES])
def test_the_loss_is_divided_once_where_keras_does_not_divide_it(name, tmp_path):
    script = HERE / f"{name}.py"
    reference_constants, (kept, mutated) = CASES[name]
    python = str(_venv() / "bin" / "python")
    result = convert_file(str(script), backend="tf-distribute")
    assert result.status == "converted", result.error
    assert not [w for w in result.warnings if w.level == "WARNING"], result.warnings
    converted = result.data.decode()
    assert converted.count(kept) == 1, converted
    source = script.read_text()
    original = re.search(r"^BATCH, RATE = .*$", source, re.M).group(0)
    reference = _weights(_run([python, str(_write(tmp_path / "global_batch.py", source.replace(
        original, reference_constants)))], tmp_path))
    runner = _write(tmp_path / "two_devices.py", DEVICES)
    mirrored = _weights(_run([python, str(runner), str(_write(tmp_path / "converted.py", converted))], tmp_path))
    np.testing.assert_allclose(mirrored, reference, atol=1e-4, err_msg="1 process x 2 devices")
    # the check can fail: the division turned around ends elsewhere
    wrong = _weights(_run([python, str(runner), str(_write(tmp_path / "mutant.py", converted.replace(kept, mutated)))],
                          tmp_path))
    assert np.abs(wrong - reference).max() > 0.05, (wrong, reference)


WHOLE_DATA = Path(__file__).resolve().parent / "whole_data"


@pytest.mark.timeout(900)
@pytest.mark.parametrize("script", ["linear_fit_by_hand.py", "gradient_helper.py", "image_trained.py"])
def test_steps_on_the_whole_data_are_the_single_process_steps(tmp_path, script):
    """A loop whose every step trains on all the rows (stop 43; refused before), its variables
    updated by hand, or its gradients returned by a helper holding the tape and applied by an
    optimizer, or the image itself trained with a count kept before each step (both refused before): on 1 process x 2 devices each replica runs the step on
    all of it, differentiating half the loss, at the script's own rate: the weights one process
    ends with. Can the check fail? The rate scaled by the replicas, as for a divided batch,
    ends elsewhere."""
    python = str(_venv() / "bin" / "python")
    result = convert_file(str(WHOLE_DATA / script), backend="tf-distribute")
    assert result.status == "converted", result.error
    assert result.full_batch
    converted = result.data.decode()
    assert "RATE = 0.1\n" in converted and converted.count(f"scaled_loss = loss {DIVIDED}\n") == 1, converted
    reference = _weights(_run([python, str(WHOLE_DATA / script)], tmp_path))
    runner = _write(tmp_path / "two_devices.py", DEVICES)
    mirrored = _weights(_run([python, str(runner), str(_write(tmp_path / "converted.py", converted))], tmp_path))
    np.testing.assert_allclose(mirrored, reference, atol=1e-5, err_msg="1 process x 2 devices")
    wrong = _weights(_run([python, str(runner), str(_write(tmp_path / "mutant.py", converted.replace(
        "RATE = 0.1\n", "RATE = 0.1 * strategy.num_replicas_in_sync\n")))], tmp_path))
    assert np.abs(wrong - reference).max() > 0.05, (wrong, reference)
