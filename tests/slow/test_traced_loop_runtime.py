"""A training loop traced by a tf.function on 1 process x 2 devices (stop
45's runtime sample: the converted script crashed there -- Keras 3 created
Adam's slots inside the traced loop on 2 local replicas, "You must feed a
value for placeholder ... replica_1"). Converted, the optimizer is built on
the model's variables in the scope (tape_scope.build_slots_before_traced_loops);
`tfdist verify --local-devices 2 --compare` must PASS with half the steps."""
from __future__ import annotations

import json
import subprocess
from pathlib import Path

import pytest

from conftest import cli_env, tf_distribute_python

pytestmark = pytest.mark.slow

SCRIPT = Path(__file__).parent / "traced_loop" / "train.py"


@pytest.mark.timeout(300)
def test_a_loop_traced_by_a_tf_function_trains_on_two_local_devices(tmp_path):
    script = tmp_path / SCRIPT.name
    script.write_bytes(SCRIPT.read_bytes())
    proc = subprocess.run([tf_distribute_python(), "-m", "tfdist.runtime.commands", "verify", "--backend",
                           "tf-distribute", "-np", "1", "--local-devices", "2", "--compare", "--json", "--timeout",
                           "240", str(script)], cwd=tmp_path, env=cli_env(), capture_output=True, text=True,
                          timeout=280)
    assert proc.returncode in (0, 1), proc.stderr[-3000:]
    report = json.loads(proc.stdout)
    assert report["result"] == "PASS", report["reasons"]
    assert report["reference"]["ranks"][0]["optimizer_steps"] == 48
    assert [r["optimizer_steps"] for r in report["distributed"]["ranks"]] == [24]
