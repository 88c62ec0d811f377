"""Gradient clipping under --backend tf-distribute, by what the model learns.

Each script (tests/slow/clipping/) trains on 256 rows in batches of 128 with
a learning rate of 0.05, and clips: by global norm in a tape loop, with the
optimizer's own ``clipnorm`` in a tape loop, by value in a Keras model's
``train_step`` under ``fit``, with the optimizer's own ``global_clipnorm``
under Keras's own ``fit`` (the optimizer made to clip the replicas' sum). Converted, its global batch is 128 x 2 = the
whole data set and its rate 0.1: on 2 replicas it must end with the weights
one process ends with on batches of 256 at 0.1 -- every step's rows are the
same, whatever the engine's split, so the comparison is exact up to
float rounding (atol 1e-4). Run as 1 process x 2 devices (MirroredStrategy,
Keras 3) and as 2 ``TF_CONFIG`` workers (MultiWorkerMirroredStrategy,
tf-keras). Can this check fail? The same conversion without its summing of
the gradients (what tfdist wrote before) must end elsewhere: asserted.
"""
from __future__ import annotations

import json
import os
import re
import subprocess
from pathlib import Path

import numpy as np
import pytest

from tfdist.api import convert_file
from conftest import cli_env, missing_stack

pytestmark = pytest.mark.slow

HERE = Path(__file__).resolve().parent
SCRIPTS = sorted((HERE / "clipping").glob("*.py"))
CONSTANTS = "BATCH, RATE = 128, 0.05"
DEVICES = '''import runpy, sys
import tensorflow as tf
cpu = tf.config.list_physical_devices("CPU")[0]
tf.config.set_logical_device_configuration(cpu, [tf.config.LogicalDeviceConfiguration()] * 2)
runpy.run_path(sys.argv[1], run_name="__main__")
'''


def _venv() -> Path:
    venv = os.environ.get("TFDIST_TF_DISTRIBUTE_VENV")
    if not venv:
        missing_stack("TFDIST_TF_DISTRIBUTE_VENV is not set: `bash scripts/test.sh` builds and exports it")
    return Path(venv)


def _weights(output: str, prefix: str = "") -> np.ndarray:
    line = next(l for l in output.splitlines() if l.startswith(prefix + "WEIGHTS "))
    return np.array(json.loads(line[len(prefix + "WEIGHTS "):]))


def _run(args, cwd: Path) -> str:
    proc = subprocess.run(args, cwd=cwd, env=cli_env(), capture_output=True, text=True, timeout=400)
    assert proc.returncode == 0, proc.stdout[-2000:] + proc.stderr[-3000:]
    return proc.stdout


def _write(path: Path, text: str) -> Path:
    path.write_text(text)
    return path


def test_every_script_sets_the_constants_the_reference_changes():
    assert SCRIPTS and all(CONSTANTS in s.read_text() for s in SCRIPTS)


#: the test budget's 2 cores: this script's shape (a step clipping its gradients itself) runs in the
#: slow tier as train_step_clip_by_value; it runs in the extended tier
EXTENDED = {"tape_clip_global_norm",
            # an optimizer's own clipping under Keras's fit (the wrapper's emitted code: test_gradient_changes.py);
            # gradients changed before the optimizer, summed first, run in the slow tier as train_step_clip_by_value
            "fit_global_clipnorm"}


@pytest.mark.timeout(900)
@pytest.mark.parametrize("script", [pytest.param(s, id=s.stem, marks=[pytest.mark.extended] if s.stem in EXTENDED
                                                  else []) for s in SCRIPTS])
def test_clipped_training_ends_where_one_process_on_the_global_batch_ends(script, tmp_path):
    python = str(_venv() / "bin" / "python")
    result = convert_file(str(script), backend="tf-distribute")
    assert result.status == "converted", result.error
    converted = result.data.decode()
    if script.stem.startswith("fit_"):  # Keras's own train_step: the optimizer clips the summed gradients
        assert "optimizer=clip_after_summing(tf.keras.optimizers.SGD(" in converted
        unsummed = converted.replace("optimizer=clip_after_summing(tf.keras", "optimizer=(tf.keras")
    else:
        assert "global_gradients(tape.gradient(" in converted and "replica_part(" in converted
        unsummed = re.sub(r"global_gradients\((tape\.gradient\([^)]*\))\)", r"\1", converted)
        unsummed = re.sub(r"replica_part\((zip\([^)]*\))\)", r"\1", unsummed)
        assert "global_gradients(tape" not in unsummed and "replica_part(zip" not in unsummed
    reference = _weights(_run([python, str(_write(tmp_path / "global_batch.py", script.read_text().replace(
        CONSTANTS, "BATCH, RATE = 256, 0.1")))], tmp_path))
    runner = _write(tmp_path / "two_devices.py", DEVICES)
    mirrored = _weights(_run([python, str(runner), str(_write(tmp_path / "converted.py", converted))], tmp_path))
    np.testing.assert_allclose(mirrored, reference, atol=1e-4, err_msg="1 process x 2 devices")
    # the check can fail: the conversion without the sum (each replica clips its share) ends elsewhere
    assert unsummed != converted
    wrong = _weights(_run([python, str(runner), str(_write(tmp_path / "unsummed.py", unsummed))], tmp_path))
    assert np.abs(wrong - reference).max() > 0.05, (wrong, reference)
    # 2 TF_CONFIG workers (tf-keras on the workers): the chief ends with one process's weights, and
    # so does the other worker where its output is not left to the chief alone
    out = _run([str(_venv() / "bin" / "tfdist"), "run", "--backend", "tf-distribute", "-np", "2", "--timeout", "300",
                str(tmp_path / "converted.py")], tmp_path)
    np.testing.assert_allclose(_weights(out, "[0]<stdout>:"), reference, atol=1e-4, err_msg="2 workers: chief")
    if "[1]<stdout>:WEIGHTS" in out:
        np.testing.assert_allclose(_weights(out, "[1]<stdout>:"), reference, atol=1e-4, err_msg="2 workers: other")
