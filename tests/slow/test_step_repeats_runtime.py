"""A GAN step function repeating its updates k times on its one batch (``for _ in range(k):``
around its tapes), called by a loop over a tf.data dataset
(tests/fast/fixtures/gradient_tape/step_repeats_updates_k_times, a held-out book's GAN in five
copies): converted for tf.distribute, `tfdist verify --compare` PASSes on 2 TF_CONFIG workers
(half the steps, disjoint rows, the same learning; 1 x 2 devices PASSed by hand). Can it fail?
The previous code refused the file ("this training loop does not read a tf.data dataset")."""
from __future__ import annotations

from pathlib import Path

import pytest

from conftest import tf_distribute_python, verify_passes

pytestmark = pytest.mark.slow

SCRIPT = Path(__file__).resolve().parents[1] / "fast" / "fixtures" / "gradient_tape" / "step_repeats_updates_k_times" / "input.py"


@pytest.mark.timeout(900)
@pytest.mark.parametrize("data", ["dataset", "array"])
def test_a_step_repeating_its_updates_trains_on_two_workers(tmp_path, data):
    script = SCRIPT
    if data == "array":  # the loop hands the step each batch of a NumPy array (a held-out GAN's shape)
        script = tmp_path / "array_batches.py"
        script.write_text(SCRIPT.read_text().replace(
            "train_dataset = tf.data.Dataset.from_tensor_slices(data).shuffle(512).batch(BATCH_SIZE)",
            "train_dataset = data.reshape(-1, BATCH_SIZE, 8)"))
    data = verify_passes(tf_distribute_python(), "tf-distribute", ["-np", "2"], script, tmp_path)
    steps = next(c for c in data["check_results"] if c["name"] == "steps-per-rank")
    assert steps["passed"], steps
