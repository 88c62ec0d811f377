"""Loops whose every step trains on the whole data (facts/whole_data.py)
under --backend horovod: every rank runs every step on all of it, the
DistributedGradientTape averages gradients that are the same on every rank,
and the steps and the learning rate stay the script's -- the weights one
process ends with. Before, Horovod divided such a loop's steps by the ranks
and scaled its rate (half the steps at twice the rate: another trajectory,
unwarned), and read a local loss function called in the step as a stream of
batches to share out.

Scripts: tests/slow/whole_data/ (variables updated by hand; gradients
returned by a helper holding the tape; an image trained by Adam with a count
kept before each step). Run on 2 ranks under horovodrun (Gloo) with
`tfdist run`. Can the check fail? The old conversion's shape -- the steps
divided by the ranks -- ends elsewhere: asserted."""
from __future__ import annotations

import json
import re
import subprocess
from pathlib import Path

import numpy as np
import pytest

from conftest import run_tfdist
from tfdist.api import convert_file

pytestmark = pytest.mark.slow

HERE = Path(__file__).resolve().parent / "whole_data"
#: script -> (the training loop as written, the same loop with its steps divided by the ranks)
LOOPS = {
    "linear_fit_by_hand.py": ("for epoch in range(12):", "for epoch in range(max(1, 12 // hvd.size())):"),
    "gradient_helper.py": ("for epoch in range(12):", "for epoch in range(max(1, 12 // hvd.size())):"),
    "image_trained.py": ("    for m in range(4):", "    for m in range(max(1, 4 // hvd.size())):"),
}


def _weights_of_rank0(text: str) -> np.ndarray:
    found = re.findall(r"^\[0\]<stdout>:WEIGHTS (.*)$", text, re.M)
    assert len(found) == 1, text[-3000:]
    return np.array(json.loads(found[0]))


@pytest.mark.timeout(600)
@pytest.mark.parametrize("script", sorted(LOOPS))
def test_whole_data_steps_on_two_ranks_end_with_the_single_process_weights(runtime_python, tmp_path, script):
    result = convert_file(str(HERE / script), backend="horovod")
    assert result.status == "converted", result.error
    assert result.full_batch
    converted = result.data.decode()
    written, divided = LOOPS[script]
    assert written in converted and "hvd.size()" not in converted.split("hvd.init()", 1)[1].split(written)[0] \
        .replace("local_rank", ""), converted  # neither the rate nor the steps scaled before the loop
    assert "RATE * hvd.size()" not in converted and "RATE = 0.1\n" in converted
    assert any("trains on the whole data" in w.message for w in result.warnings)
    ref = subprocess.run([runtime_python, str(HERE / script)], capture_output=True, text=True, timeout=300,
                         cwd=tmp_path)
    assert ref.returncode == 0, ref.stderr[-3000:]
    reference = np.array(json.loads(re.findall(r"^WEIGHTS (.*)$", ref.stdout, re.M)[0]))
    (tmp_path / "converted.py").write_text(converted)
    run = run_tfdist(runtime_python, ["run", "-np", "2", str(tmp_path / "converted.py")], tmp_path, timeout=300)
    assert run.returncode == 0, run
    np.testing.assert_allclose(_weights_of_rank0(run.stdout), reference, atol=1e-5)
    (tmp_path / "mutant.py").write_text(converted.replace(written, divided))
    wrong = run_tfdist(runtime_python, ["run", "-np", "2", str(tmp_path / "mutant.py")], tmp_path, timeout=300)
    assert wrong.returncode == 0, wrong
    assert np.abs(_weights_of_rank0(wrong.stdout) - reference).max() > 0.05
