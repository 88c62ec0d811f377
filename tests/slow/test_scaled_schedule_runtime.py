"""The schedule class tfdist writes around a learning-rate schedule of the
script's own (backends.base.scaled_schedule_class), executed with the real
TensorFlow/Keras: its rate at a process's step t is the policy's factor
times the script's rate at step N x t (each process takes 1/N of the steps),
and an optimizer rebuilt from its config in the same process -- what
Horovod's DistributedOptimizer does -- gets the very schedule back, even an
unregistered class without get_config(). The end-to-end runs (tfdist verify
on 2 ranks of a fit with such a schedule, both engines) are in the slow tier
too (test_user_schedule_converts_and_trains)."""
from __future__ import annotations

import os
import subprocess
from pathlib import Path

import pytest

from conftest import cli_env, run_tfdist

pytestmark = pytest.mark.slow


def _quoted(text: str) -> str:
    return repr(text).replace("'", '"')


def test_rates_compressed_and_scaled_and_rebuilt_from_config(runtime_python, tmp_path):
    from tfdist.backends.base import scaled_schedule_class

    code = "import tensorflow as tf\n\n" + scaled_schedule_class("ScaledLearningRate", "tf.keras", _quoted) + '''

class Linear(tf.keras.optimizers.schedules.LearningRateSchedule):
    def __call__(self, step):
        return tf.cast(step, tf.float32) * 0.001 + 0.01


inner = Linear()
scaled = ScaledLearningRate(inner, 2, steps=3)
for t in range(6):
    got = float(scaled(tf.constant(t, tf.int64)))
    want = 2 * (t * 3 * 0.001 + 0.01)
    assert abs(got - want) < 1e-6, (t, got, want)
again = ScaledLearningRate.from_config(scaled.get_config())
assert again.schedule is inner and again.factor == 2 and again.steps == 3
opt = tf.keras.optimizers.Adam(scaled)
rebuilt = type(opt).from_config(opt.get_config())
assert float(rebuilt.learning_rate) == float(opt.learning_rate)
print("ok")
'''
    script = tmp_path / "schedule.py"
    script.write_text(code)
    env = cli_env({"TF_CPP_MIN_LOG_LEVEL": "3"})
    res = subprocess.run([runtime_python, str(script)], capture_output=True, text=True, timeout=240, env=env)
    assert res.returncode == 0 and res.stdout.strip().endswith("ok"), res.stderr[-3000:]
    venv = os.environ.get("TFDIST_TF_DISTRIBUTE_VENV")
    if venv:   # Keras 3 too
        res = subprocess.run([str(Path(venv) / "bin" / "python"), str(script)], capture_output=True, text=True,
                             timeout=240, env=env)
        assert res.returncode == 0 and res.stdout.strip().endswith("ok"), res.stderr[-3000:]


USER_SCHEDULE_FIT = Path(__file__).parent / "runtime_scripts" / "keras_fit_user_schedule.py"


@pytest.mark.timeout(400)
def test_user_schedule_converts_and_trains(runtime_python, tmp_path):
    """Horovod's DistributedOptimizer rebuilt the optimizer from its config
    and failed on the script's unregistered schedule class (both ranks exit
    1, before this wrapper); now verify PASSes on 2 ranks."""
    res = run_tfdist(runtime_python, ["verify", "--timeout", "240", str(USER_SCHEDULE_FIT)], tmp_path, timeout=300)
    assert res.returncode == 0, res.stdout[-3000:]
    assert "PASS" in res.stdout
