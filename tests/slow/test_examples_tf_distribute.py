"""Every bundled TF2 example, converted with --backend tf-distribute and run
as 2 TF_CONFIG workers on TensorFlow 2.21 (the project's second runtime
stack, scripts/setup_runtime.sh tf-distribute): `tfdist verify` must PASS
(identical variables, about half the original's optimizer steps per worker,
disjoint samples with intact labels where it can see them, files at the
user's paths written by the chief only). The new user's path, convert then
run, is exercised on one Keras and one GradientTape script."""
import json
import os
import subprocess
import sys
from pathlib import Path

import pytest
from conftest import missing_stack

ROOT = Path(__file__).resolve().parents[2]
TF2_EXAMPLES = ["keras_sequential.py", "keras_numpy.py", "keras_subclassed.py",
                "tape_tf_function.py", "tape_gan.py", "tape_raw_variables.py"]
VENV = os.environ.get("TFDIST_TF_DISTRIBUTE_VENV")



@pytest.fixture(autouse=True)
def _needs_the_tf_distribute_stack():
    if not VENV:
        missing_stack("TFDIST_TF_DISTRIBUTE_VENV is not set (scripts/test.sh sets it to the TF 2.21 stack)")


#: On TensorFlow 2.15 (Keras 2, the Horovod stack) too, where the API allows:
#: Keras 2 refuses a Loss object's default reduction inside strategy.run, so
#: the tape examples built on Keras Loss objects need Keras 3.
ON_TF_2_15 = ["keras_sequential.py", "keras_numpy.py", "keras_subclassed.py", "tape_raw_variables.py"]


def _tfdist(*args, cwd, timeout=900, venv=None):
    env = {k: v for k, v in os.environ.items() if k != "TF_CONFIG"}
    env["TF_CPP_MIN_LOG_LEVEL"] = "2"
    exe = Path(venv or VENV) / "bin" / "tfdist"
    return subprocess.run([str(exe), *args], cwd=cwd, env=env, timeout=timeout,
                          stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)


@pytest.mark.extended   # the examples' shapes run in the correctness and modern suites; convert-then-run below stays
@pytest.mark.parametrize("example", TF2_EXAMPLES)
def test_example_verifies_on_two_tf_distribute_workers(example, tmp_path):
    p = _tfdist("verify", "--backend", "tf-distribute", "-np", "2", "--json", str(ROOT / "examples" / example),
                cwd=tmp_path)
    assert p.returncode == 0, p.stdout[-4000:] + p.stderr[-4000:]
    data = json.loads(p.stdout)
    assert data["passed"] is True, json.dumps(data.get("reasons", data), indent=1)[:4000]
    assert data["checks"], "verify checked nothing"


@pytest.mark.extended   # TF 2.15 is the Horovod stack; a tf.distribute user has TF 2.16+
@pytest.mark.parametrize("example", ON_TF_2_15)
def test_example_verifies_on_tf_2_15_too(example, tmp_path):
    """The same conversion on the Horovod stack's TensorFlow 2.15 (this
    pytest's own interpreter), run as 2 TF_CONFIG workers."""
    venv = Path(sys.executable).parent.parent
    if not (venv / "bin" / "tfdist").exists():
        missing_stack("tfdist is not installed next to this interpreter")
    p = _tfdist("verify", "--backend", "tf-distribute", "-np", "2", "--json", str(ROOT / "examples" / example),
                cwd=tmp_path, venv=venv)
    assert p.returncode == 0, p.stdout[-4000:] + p.stderr[-4000:]
    data = json.loads(p.stdout)
    assert data["passed"] is True and data["checks"], data.get("reasons")


@pytest.mark.parametrize("example", ["keras_sequential.py", "tape_tf_function.py"])
def test_new_user_converts_then_runs_two_workers(example, tmp_path):
    converted = tmp_path / "train_dist.py"
    p = _tfdist("convert", str(ROOT / "examples" / example), "--backend", "tf-distribute", "-o", str(converted),
                cwd=tmp_path)
    assert p.returncode == 0, p.stderr
    p = _tfdist("run", "--backend", "tf-distribute", "-np", "2", "--timeout", "600", str(converted), cwd=tmp_path)
    assert p.returncode == 0, p.stdout[-4000:] + p.stderr[-4000:]
    out = p.stdout + p.stderr
    finals = [line for line in out.splitlines() if "final loss" in line]
    assert finals and all(line.startswith("[0]") for line in finals), finals  # printed by the chief only


def test_tf1_script_is_refused_with_a_pointer_to_horovod(tmp_path):
    out = tmp_path / "dist.py"
    p = _tfdist("convert", str(ROOT / "examples" / "tf1_session.py"), "--backend", "tf-distribute", "-o", str(out),
                cwd=tmp_path, timeout=120)
    assert p.returncode == 2
    assert "--backend horovod" in p.stderr
    assert not out.exists()


def test_fault_tolerant_fit_resumes_after_the_job_is_killed(tmp_path):
    """--fault-tolerant: a 2-worker fit() killed after epoch 2 of 4, started
    again, resumes at epoch 3 (Keras BackupAndRestore) instead of epoch 1."""
    script = ROOT / "tests" / "slow" / "tf_distribute_scripts" / "keras_fit_interrupted.py"
    train = tmp_path / "train.py"
    p = _tfdist("convert", str(script), "--backend", "tf-distribute", "--fault-tolerant", "-o", str(train),
                cwd=tmp_path)
    assert p.returncode == 0, p.stderr
    env_die = dict(os.environ, TFDIST_TEST_DIE_AFTER_EPOCH="2")
    killed = subprocess.run([str(Path(VENV) / "bin" / "tfdist"), "run", "--backend", "tf-distribute", "-np", "2",
                             "--timeout", "600", str(train)], cwd=tmp_path, env=env_die, timeout=900,
                            stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True)
    assert killed.returncode != 0 and "dying after epoch 2" in killed.stdout, killed.stdout[-3000:]
    resumed = _tfdist("run", "--backend", "tf-distribute", "-np", "2", "--timeout", "600", str(train), cwd=tmp_path)
    assert resumed.returncode == 0, resumed.stdout[-3000:] + resumed.stderr[-3000:]
    starts = [line.split("starting epoch ")[1] for line in resumed.stdout.splitlines()
              if line.startswith("[0]") and "starting epoch" in line]
    assert starts == ["3", "4"], starts
