"""A GAN's tape loop reading next() batches of a dataset another module of
the project builds and batches (helper_data/gan_next.py with
helper_data/data_helpers.py): tf-distribute refused it ("does not read a
tf.data dataset"); now the dataset is distributed, its batch kept per
replica through the helper's argument at the call. `tfdist verify
--compare` on 2 TF_CONFIG workers and on 1 process x 2 devices: every
process exits 0, replicas end identical, each takes half the original's
steps on disjoint data, and the GAN learns like the original. Can it fail?
The previous code refuses the file (verify exits non-zero); a conversion
that left the helper's batch as the global batch halves each replica's
batch with the rate doubled (the comparison band), and one that did not
divide the data fails the work-division check."""
from __future__ import annotations

from pathlib import Path

import pytest

from conftest import tf_distribute_python, verify_passes
from tfdist.api import convert_file

pytestmark = pytest.mark.slow

SCRIPT = Path(__file__).resolve().parent / "helper_data" / "gan_next.py"
MODES = [pytest.param(["-np", "1", "--local-devices", "2"], id="devices"), pytest.param(["-np", "2"], id="workers")]


@pytest.mark.timeout(900)
@pytest.mark.parametrize("mode", MODES)
def test_a_gan_reading_a_helper_modules_dataset_trains_like_the_original(mode, tmp_path):
    converted = convert_file(str(SCRIPT), backend="tf-distribute")
    assert converted.status == "converted", converted.error
    assert "make_dataset(images, 32 * strategy.num_replicas_in_sync)" in converted.code
    data = verify_passes(tf_distribute_python(), "tf-distribute", mode, SCRIPT, tmp_path)
    steps = next(c for c in data["check_results"] if c["name"] == "steps-per-rank")
    assert steps["passed"] and set(steps["measured"]["ranks"].values()) == {60}, steps
