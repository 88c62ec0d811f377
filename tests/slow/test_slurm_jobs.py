"""Converted scripts trained as real Slurm jobs: `tfdist job slurm --submit
--wait` on a one-node Slurm cluster the tests start themselves
(tests/slow/support/slurm_cluster.py: slurm.conf in a temporary directory;
munged, slurmctld and slurmd started here and stopped after the module).

Each job is 2 tasks under `tfdist run --slurm --record DIR` (verify's probe,
so every task leaves what it did in DIR/rank-<R>.json): the job must succeed,
both tasks must hold bitwise-identical trainable variables after half the
original's optimizer steps each, and only the chief / rank 0 must have
written the script's files.  A job whose second task fails must end non-zero
with that task's error in `tfdist job`'s report.

The packages come from scripts/setup_slurm.sh (scripts/test.sh runs it);
where Slurm cannot be started (not installed, not root) the tests are skipped
with that reason.  Each pytest worker that runs these tests starts its own
cluster (its own directory, ports and job ids), so two workers' jobs never
share a port.

Budget: the tf-distribute tape job, the Horovod Keras job and the failing
tf-distribute job run in the slow tier; the other engine of each script and
the failing Horovod job are `extended`."""
from __future__ import annotations

import os
import subprocess
import sys
import time
from pathlib import Path

import pytest

from tfdist.cli import main as tfdist_main
from tfdist.runtime.verify_records import read_records

sys.path.insert(0, str(Path(__file__).resolve().parent / "support"))
from slurm_cluster import SlurmCluster, why_unavailable  # noqa: E402
from conftest import missing_stack

SRC = Path(__file__).resolve().parents[2] / "src"
SCRIPTS = Path(__file__).resolve().parent / "slurm_scripts"
TF_DISTRIBUTE_VENV = os.environ.get("TFDIST_TF_DISTRIBUTE_VENV")
#: optimizer steps of the original keras_fit.py / tape_loop.py on one process
ORIGINAL_STEPS = 8
TASKS = 2

@pytest.fixture(scope="module")
def cluster(tmp_path_factory):
    reason = why_unavailable()
    if reason:
        missing_stack(reason)
    started = time.monotonic()
    # 4 CPUs configured (the machine may have fewer: slurm_cluster's config_overrides): the
    # parameter-server job runs a chief, 2 workers and a parameter server, one task each
    c = SlurmCluster.start(tmp_path_factory.mktemp("slurm"), cpus=4)
    print(f"one-node Slurm ({c.node}) up in {time.monotonic() - started:.1f}s")
    try:
        yield c
    finally:
        c.stop()


def _python(backend: str, runtime_python: str) -> str:
    if backend == "horovod":
        return runtime_python
    if not TF_DISTRIBUTE_VENV:
        missing_stack("TFDIST_TF_DISTRIBUTE_VENV is not set (scripts/test.sh sets it to the TF 2.21 stack)")
    return str(Path(TF_DISTRIBUTE_VENV) / "bin" / "python")


def _convert(name: str, backend: str, directory: Path) -> Path:
    # a space in the name: the job's name, its #SBATCH lines and its command must quote it (issue 40)
    out = directory / f"{Path(name).stem} dist.py"
    assert tfdist_main(["convert", str(SCRIPTS / name), "--backend", backend, "-o", str(out), "-q"]) == 0
    return out


def _job(cluster: SlurmCluster, python: str, script: Path, cwd: Path, *options: str):
    env = dict(cluster.env)
    env["PYTHONPATH"] = os.pathsep.join([str(SRC)] + ([env["PYTHONPATH"]] if env.get("PYTHONPATH") else []))
    env["TF_CPP_MIN_LOG_LEVEL"] = "2"
    env.pop("TF_CONFIG", None)
    started = time.monotonic()
    proc = subprocess.run([python, "-m", "tfdist", "job", "slurm", str(script), "--nodes", "1",
                           "--tasks-per-node", str(TASKS), "--submit", "--wait", "--wait-timeout", "270",
                           "--timeout", "240", *options],
                          cwd=cwd, env=env, capture_output=True, text=True, timeout=300)
    print(f"{script.name}: job finished in {time.monotonic() - started:.1f}s (exit {proc.returncode})")
    return proc


def _check_trained(proc, records: Path, backend: str, written: str) -> None:
    detail = f"\n--- stdout ---\n{proc.stdout[-4000:]}\n--- stderr ---\n{proc.stderr[-4000:]}"
    assert proc.returncode == 0, detail
    assert "COMPLETED (exit code 0:0)" in proc.stdout, detail
    assert "[0]<stdout>:" in proc.stdout       # the job's output, streamed with rank prefixes
    ranks = read_records(records, TASKS)
    assert [r.rank for r in ranks] == [0, 1] and not any(r.missing for r in ranks), detail
    assert all(r.exit_code == 0 and r.size == TASKS for r in ranks), ranks
    hashes = {r.trainable_sha256 for r in ranks}
    assert len(hashes) == 1 and None not in hashes, f"tasks hold different variables: {hashes}"
    assert all(r.trainable_count > 0 for r in ranks)
    assert [r.optimizer_steps for r in ranks] == [ORIGINAL_STEPS // TASKS] * TASKS, \
        [r.optimizer_steps for r in ranks]
    if backend == "tf-distribute":
        assert all(r.multi_worker_size == TASKS for r in ranks), [r.strategies for r in ranks]
    chief = [f.path for f in ranks[0].files if f.exists_at_exit]
    assert any(p.endswith(written) for p in chief), ranks[0].files
    # written once: the other task wrote nothing at the user's paths (tf.distribute's
    # non-chief saves go to a temporary directory removed at exit)
    others = [f.path for f in ranks[1].files if not f.removed_temp and f.exists_at_exit is not False]
    assert not others, others


def _trains(cluster, runtime_python, tmp_path, backend: str, name: str, written: str):
    python = _python(backend, runtime_python)
    script = _convert(name, backend, tmp_path)
    records = tmp_path / "records"
    proc = _job(cluster, python, script, tmp_path, "--record", str(records))
    _check_trained(proc, records, backend, written)
    sbatch = (tmp_path / f"{script.stem}.sbatch").read_text()
    assert f"PYTHON={python}" in sbatch.splitlines()


@pytest.mark.timeout(330)
def test_tape_script_as_a_slurm_job_tf_distribute(cluster, runtime_python, tmp_path):
    _trains(cluster, runtime_python, tmp_path, "tf-distribute", "tape_loop.py", "ckpt/final")


@pytest.mark.timeout(330)
def test_keras_script_as_a_slurm_job_horovod(cluster, runtime_python, tmp_path):
    _trains(cluster, runtime_python, tmp_path, "horovod", "keras_fit.py", "final.weights.h5")


@pytest.mark.extended
@pytest.mark.timeout(330)
def test_keras_script_as_a_slurm_job_tf_distribute(cluster, runtime_python, tmp_path):
    _trains(cluster, runtime_python, tmp_path, "tf-distribute", "keras_fit.py", "final.weights.h5")


@pytest.mark.extended
@pytest.mark.timeout(330)
def test_tape_script_as_a_slurm_job_horovod(cluster, runtime_python, tmp_path):
    _trains(cluster, runtime_python, tmp_path, "horovod", "tape_loop.py", "ckpt/final")


def _fails(cluster, runtime_python, tmp_path, backend: str):
    python = _python(backend, runtime_python)
    script = tmp_path / "task1_fails.py"
    script.write_bytes((SCRIPTS / "task1_fails.py").read_bytes())
    proc = _job(cluster, python, script, tmp_path, "--backend", backend, "--allow-unconverted")
    detail = f"\n--- stdout ---\n{proc.stdout[-4000:]}\n--- stderr ---\n{proc.stderr[-4000:]}"
    assert proc.returncode != 0, detail
    assert "FAILED" in proc.stderr and "task 1 failed (exit 1):" in proc.stderr, detail
    report = proc.stderr.split("task 1 failed", 1)[1]
    assert "ValueError: task 1 cannot read its shard: data/shard-1.tfrecord is missing" in report, detail
    assert "task 0 done" not in proc.stdout + proc.stderr     # the other task was stopped, not left waiting
    deadline = time.monotonic() + 15
    while _running(script) and time.monotonic() < deadline:
        time.sleep(0.5)
    assert not _running(script), "task 0's process outlived the job"


def _running(script: Path) -> list[int]:
    """Processes whose command line names ``script``."""
    found = []
    for name in os.listdir("/proc"):
        if name.isdigit():
            try:
                with open(f"/proc/{name}/cmdline", "rb") as fh:
                    if str(script).encode() in fh.read():
                        found.append(int(name))
            except OSError:
                pass
    return found


@pytest.mark.timeout(200)
def test_a_failing_task_fails_the_job_tf_distribute(cluster, runtime_python, tmp_path):
    _fails(cluster, runtime_python, tmp_path, "tf-distribute")


@pytest.mark.extended
@pytest.mark.timeout(200)
def test_a_failing_task_fails_the_job_horovod(cluster, runtime_python, tmp_path):
    _fails(cluster, runtime_python, tmp_path, "horovod")


BLOCKED = Path(__file__).resolve().parent / "support" / "blocked_python.py"
#: every worker's weights, after the converted script (the test's addition: the probe needs tfdist)
WEIGHTS = ('\nimport hashlib\nprint("WEIGHTS", hashlib.sha256(b"".join(w.tobytes() for w in model.get_weights()))'
           '.hexdigest(), int(model.optimizer.iterations.numpy()), flush=True)\n')


def blocked_python(python, directory: Path) -> Path:
    """An interpreter running ``python`` where tfdist and LibCST cannot be imported."""
    wrapper = directory / "python"
    wrapper.write_text(f'#!/bin/bash\nexec {python} -I {BLOCKED} "$@"\n')
    wrapper.chmod(0o755)
    return wrapper


@pytest.mark.timeout(330)
@pytest.mark.parametrize("backend", ["tf-distribute", "horovod"])
def test_a_job_needs_nothing_but_the_training_environment(cluster, runtime_python, tmp_path, backend):
    """--python an environment where neither tfdist nor LibCST imports (issue
    40: the tasks stopped with ``No module named 'libcst'``): the batch script
    carries its tasks' code -- a TF_CONFIG per task, or a Horovod rank per task
    with the Gloo rendezvous started by the batch script (no horovodrun, no
    ssh) -- and both train, with the same weights, half the steps each, the
    weights file written once."""
    python = Path(_python(backend, runtime_python))
    wrapper = blocked_python(python, tmp_path)
    check = subprocess.run([str(wrapper), "-c", "import tfdist"], capture_output=True, text=True, timeout=60)
    assert check.returncode != 0 and "No module named 'tfdist'" in check.stderr, check
    script = _convert("keras_fit.py", backend, tmp_path)
    script.write_text(script.read_text() + WEIGHTS)
    # written by tfdist (here), run with --python the blocked interpreter; no --record / --timeout,
    # tfdist's own features that need it in the job
    env = dict(cluster.env, PYTHONPATH=str(SRC), TF_CPP_MIN_LOG_LEVEL="2")
    env.pop("TF_CONFIG", None)
    proc = subprocess.run([sys.executable, "-m", "tfdist", "job", "slurm", str(script), "--nodes", "1",
                           "--tasks-per-node", str(TASKS), "--python", str(wrapper), "--submit", "--wait",
                           "--wait-timeout", "270"], cwd=tmp_path, env=env, capture_output=True, text=True, timeout=300)
    detail = f"\n--- stdout ---\n{proc.stdout[-4000:]}\n--- stderr ---\n{proc.stderr[-4000:]}"
    assert proc.returncode == 0 and "COMPLETED (exit code 0:0)" in proc.stdout, detail
    weights = sorted(line.split(": ", 1)[0].strip() + " " + line.split("WEIGHTS ", 1)[1]
                     for line in proc.stdout.splitlines() if "WEIGHTS " in line)
    assert [w.split()[0] for w in weights] == ["0", "1"], detail            # srun --label: each task's line
    assert len({w.split()[1] for w in weights}) == 1, weights                 # the same variables
    assert {int(w.split()[2]) for w in weights} == {ORIGINAL_STEPS // TASKS}, weights
    assert (tmp_path / "final.weights.h5").exists()
    sbatch = (tmp_path / f"{script.stem}.sbatch").read_text()
    assert "-m tfdist" not in sbatch and "PYTHONPATH" not in sbatch, sbatch


EXAMPLES = SRC / "tfdist" / "rules" / "examples"


@pytest.mark.parametrize("example,written", [("gradient_tape/parameter_server_tape", "final.weights.h5"),
                                             ("keras/parameter_server_fit", "model.weights.h5")])
@pytest.mark.timeout(330)
def test_a_parameter_server_script_as_a_slurm_job(cluster, runtime_python, tmp_path, example, written):
    """Issue 41: a GradientTape loop and a tf-keras fit() converted with
    --strategy parameter-server, each run by `tfdist job slurm --ps 1 --submit
    --wait` as 4 Slurm tasks (a chief, 2 workers, 1 parameter server on the
    test node's 4 configured CPUs): the job succeeds with the chief's status,
    the chief trains (the loss falls) and writes the weights once, and no task
    is left serving."""
    python = _python("tf-distribute", runtime_python)
    script = tmp_path / "ps train.py"
    assert tfdist_main(["convert", str(EXAMPLES / example / "input.py"), "--backend", "tf-distribute",
                        "--strategy", "parameter-server", "-o", str(script), "-q"]) == 0
    env = dict(cluster.env)
    env["PYTHONPATH"] = os.pathsep.join([str(SRC)] + ([env["PYTHONPATH"]] if env.get("PYTHONPATH") else []))
    env["TF_CPP_MIN_LOG_LEVEL"] = "2"
    env.pop("TF_CONFIG", None)
    proc = subprocess.run([python, "-m", "tfdist", "job", "slurm", str(script), "--nodes", "1",
                           "--tasks-per-node", "4", "--ps", "1", "--submit", "--wait",
                           "--wait-timeout", "270"], cwd=tmp_path, env=env, capture_output=True, text=True, timeout=300)
    detail = f"\n--- stdout ---\n{proc.stdout[-4000:]}\n--- stderr ---\n{proc.stderr[-4000:]}"
    assert proc.returncode == 0, detail
    assert "COMPLETED (exit code 0:0)" in proc.stdout, detail
    lines = [line for line in proc.stdout.splitlines() if "loss" in line and ("epoch " in line or "Epoch" in line
                                                                             or "final loss" in line)]
    assert lines and all(line.split("<", 1)[0].strip(" :").endswith("0") or line.startswith("0:") for line in lines), lines
    if "final loss" in proc.stdout:  # fit(): the chief's history
        assert float(proc.stdout.rsplit("final loss ", 1)[1].split()[0]) < 0.6, detail
    else:
        losses = [float(line.rsplit("loss ", 1)[1]) for line in lines]
        assert len(losses) == 4 and losses[-1] < losses[0] / 4, detail
    assert (tmp_path / written).exists()
    assert not list(tmp_path.glob(".tfdist-chief-done-*"))
    deadline = time.monotonic() + 15
    while _running(script) and time.monotonic() < deadline:
        time.sleep(0.5)
    assert not _running(script), "a worker or parameter server outlived the job"
