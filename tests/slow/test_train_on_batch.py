"""train_on_batch loops on both engines, 2 processes.

* What the tf-distribute conversion rests on, measured: under
  MirroredStrategy train_on_batch splits the batch it is given between the
  local replicas (the step is the whole batch's), and under
  MultiWorkerMirroredStrategy each worker keeps its own part of the batch it
  fed (worker g the g-th half), the gradients averaged. So the user's batch
  is the global batch there: learning rate and step count are kept.
* A small GAN (correctness_scripts/train_on_batch/gan_numpy_batches.py,
  discriminator + combined model, NumPy random batches after a global seed)
  converted and run on 2 processes: every rank exits 0 with bitwise-identical
  variables; Horovod ranks take half the original's optimizer steps (each
  rank its own batches, learning rate x 2), tf-distribute workers the same
  count as the original (each training on half of every batch); the
  generator learns (its samples' mean moves towards the data's centre) as
  the original's does.
"""
from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest

from tfdist.api import convert_file
from tfdist.runtime import launcher
from tfdist.runtime.verify import run_and_observe

from test_training_correctness import CORRECTNESS, run_env
from conftest import missing_stack

pytestmark = pytest.mark.slow

HERE = Path(__file__).resolve().parent
GAN = CORRECTNESS / "train_on_batch" / "gan_numpy_batches.py"
SPLIT = HERE / "support" / "train_on_batch_split.py"
VENV = os.environ.get("TFDIST_TF_DISTRIBUTE_VENV")


def _tfd_python() -> str:
    if not VENV:
        missing_stack("TFDIST_TF_DISTRIBUTE_VENV is not set (scripts/test.sh sets it to the TF 2.21 stack)")
    return str(Path(VENV) / "bin" / "python")


def _results(text: str):
    return [json.loads(line[len("RESULT "):]) for line in text.splitlines() if line.startswith("RESULT ")]


@pytest.mark.timeout(600)
@pytest.mark.extended   # measures what TensorFlow does (the fact the conversion rests on), not the conversion
def test_tf_distribute_train_on_batch_splits_the_batch_it_is_given():
    python = _tfd_python()
    env = dict(os.environ, TF_USE_LEGACY_KERAS="1", TF_CPP_MIN_LOG_LEVEL="3")
    env.pop("TF_CONFIG", None)
    out = subprocess.run([python, str(SPLIT), "mirrored"], env=env, capture_output=True, text=True, timeout=300)
    (local,) = _results(out.stdout)
    assert local["replicas"] == 2
    np.testing.assert_allclose(local["kernel"], local["whole_batch"], rtol=1e-5)
    ports = launcher.free_ports(2)
    cluster = [f"localhost:{p}" for p in ports]
    procs = [subprocess.Popen([python, str(SPLIT), "workers"], env=dict(env, TF_CONFIG=launcher.tf_config(cluster, i)),
                              stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True) for i in range(2)]
    outs = [p.communicate(timeout=300)[0] for p in procs]
    results = [r for o in outs for r in _results(o)]
    assert len(results) == 2, outs
    for r in results:
        assert r["replicas"] == 2
        np.testing.assert_allclose(r["kernel"], r["each_worker_its_own_part"], rtol=1e-5)
        assert not np.allclose(r["kernel"], r["each_worker_its_whole_batch"], rtol=1e-3)
    assert results[0]["kernel"] == results[1]["kernel"]


def _run_original_and_converted(script: Path, converted: Path, tmp_path: Path, timeout: int, common: dict):
    """The original on one process and the conversion on 2, both asserted to
    exit 0 on every process."""
    original = run_and_observe(script, 1, tmp_path / "original", timeout, single=True, label="original",
                               log_path=tmp_path / "original.log", **common)
    distributed = run_and_observe(converted, 2, tmp_path / "distributed", timeout, single=False, as_file=script,
                                  label="2 processes", log_path=tmp_path / "distributed.log", **common)
    for obs in (original, distributed):
        assert not obs.timed_out and obs.returncode == 0, obs.tail[-30:]
        assert all(r.exit_code == 0 and not r.missing for r in obs.ranks), [(r.rank, r.exception) for r in obs.ranks]
    return original, distributed


def _run_gan(tmp_path: Path, backend: str, python=None):
    result = convert_file(GAN, backend=backend)
    assert result.status == "converted", (result.error, result.error_line)
    assert not [w for w in result.warnings if w.level == "WARNING"]
    converted = tmp_path / "converted" / GAN.name
    converted.parent.mkdir(parents=True)
    converted.write_bytes(result.data)
    env = run_env()
    if backend == "tf-distribute":
        # the converted workers run tf.keras on tf-keras (the setup sets TF_USE_LEGACY_KERAS under TF_CONFIG);
        # the original runs on the same Keras: under Keras 3 `discriminator.trainable = False` also stops the
        # discriminator's own train_on_batch (measured: the original GAN diverged, 4.0 -> 10.9)
        env["TF_USE_LEGACY_KERAS"] = "1"
    common = dict(env=env, backend=backend)
    if python is not None:
        common["python"] = python
    original, distributed = _run_original_and_converted(GAN, converted, tmp_path, 900, common)
    ranks = distributed.ranks
    assert sorted(r.rank for r in ranks) == [0, 1]
    assert ranks[0].trainable_count > 0 and len({r.trainable_sha256 for r in ranks}) == 1
    (ref,) = original.ranks
    before_o, after_o, *_ = np.load(tmp_path / "original" / "gan_result.npy")
    before_d, after_d, *_ = np.load(tmp_path / "distributed" / "gan_result.npy")
    summary = dict(ref_steps=ref.optimizer_steps, steps=[r.optimizer_steps for r in ranks],
                   original=(float(before_o), float(after_o)), distributed=(float(before_d), float(after_d)))
    print(backend, summary)
    # the generator learnt, as the original's did
    assert after_o < 0.75 * before_o, summary
    assert after_d < 0.75 * before_d, summary
    assert abs(after_d - after_o) < 0.5 * before_o, summary
    # samples and results written by rank 0 only (as the probe saw each process write)
    def written(rec):
        return sorted({Path(f.path).name for f in rec.files if Path(f.path).name.startswith("gan_")})

    assert written(ref) and set(written(ranks[0])) <= set(written(ref)) and "gan_result.npy" in written(ranks[0]), (
        written(ref), written(ranks[0]))
    assert written(ranks[1]) == [], written(ranks[1])
    return ref, ranks


@pytest.mark.timeout(1800)
def test_gan_train_on_batch_horovod_two_ranks(tmp_path):
    ref, ranks = _run_gan(tmp_path, "horovod")
    steps = {r.optimizer_steps for r in ranks}
    assert len(steps) == 1 and abs(steps.pop() - ref.optimizer_steps / 2) <= 2, (ref.optimizer_steps, ranks)


@pytest.mark.timeout(1800)
def test_gan_train_on_batch_tf_distribute_two_workers(tmp_path):
    ref, ranks = _run_gan(tmp_path, "tf-distribute", _tfd_python())
    # the batch is split, not the steps: every worker runs the original's steps
    assert {r.optimizer_steps for r in ranks} == {ref.optimizer_steps}, (ref.optimizer_steps, ranks)


def _verify_steps(script: Path, backend: str, tmp_path: Path) -> dict:
    """`tfdist verify --backend <backend> -np 2 --json script` from this
    checkout, in the engine's environment: asserts PASS, returns its
    steps-per-rank check."""
    env = dict(run_env(), PYTHONPATH=str(Path(__file__).resolve().parents[2] / "src"))
    env.pop("TF_USE_LEGACY_KERAS", None)  # the conversion chooses the Keras its workers run
    python = _tfd_python() if backend == "tf-distribute" else sys.executable
    res = subprocess.run([python, "-m", "tfdist", "verify", "--backend", backend, "-np", "2", "--json",
                          "--timeout", "600", str(script)], cwd=tmp_path, env=env, capture_output=True, text=True,
                         timeout=850)
    assert res.returncode in (0, 1), res.stderr[-3000:]
    report = json.loads(res.stdout)
    assert report["result"] == "PASS", json.dumps(report, indent=1)[:4000]
    return next(c for c in report["check_results"] if c["name"] == "steps-per-rank")


@pytest.mark.timeout(900)
def test_tfdist_verify_tf_distribute_passes_a_gan_whose_models_are_passed_to_train(tmp_path):
    """`tfdist verify --backend tf-distribute` end to end on a train_on_batch
    GAN: the conversion keeps the steps (each worker trains on its part of
    every batch) and verify expects that; the original runs on tf-keras, as
    the converted workers do (under Keras 3 its frozen discriminator would
    take none of its own steps, and the step counts would differ)."""
    steps = _verify_steps(CORRECTNESS / "train_on_batch" / "gan_models_passed.py", "tf-distribute", tmp_path)
    assert steps["measured"]["full_batch"] and steps["measured"]["original"] == 100, steps


@pytest.mark.timeout(900)
# Each recipe runs on one engine in the slow tier, the other in the extended
# tier (the test budget's 2 cores): the GAN's train_on_batch runs on both
# engines in the slow tier (test_gan_train_on_batch_*).
@pytest.mark.parametrize("fixture,steps,backend", [
    ("train_on_batch_gan_model_factories", 64, "tf-distribute"),
    pytest.param("train_on_batch_gan_model_factories", 64, "horovod", marks=pytest.mark.extended),
    ("train_on_batch_gan_class_attributes", 200, "horovod"),
    pytest.param("train_on_batch_gan_class_attributes", 200, "tf-distribute", marks=pytest.mark.extended)])
def test_tfdist_verify_passes_gan_recipes(tmp_path, backend, fixture, steps):
    """Two common GAN recipes -- define_discriminator() / define_gan(g_model,
    d_model) functions, and a GAN class keeping its models in attributes --
    converted and verified on 2 processes: identical variables, the step
    count each engine gives (Horovod 1/2, tf-distribute all of them, each
    worker on its part of the batch), rank 0 alone saving the generator."""
    script = Path(__file__).resolve().parents[1] / "fast" / "fixtures" / "keras" / fixture / "input.py"
    checked = _verify_steps(script, backend, tmp_path)
    assert checked["measured"]["original"] == steps, checked
    assert set(checked["measured"]["ranks"].values()) == {steps if backend == "tf-distribute" else steps // 2}, checked


@pytest.mark.timeout(900)
@pytest.mark.parametrize("backend", ["horovod",
                                     # extended (the budget): the slow tier runs this shape on Horovod
                                     # and a train_on_batch GAN on tf-distribute
                                     pytest.param("tf-distribute", marks=pytest.mark.extended)])
def test_gan_models_built_by_an_unread_module(tmp_path, backend):
    """2 processes: a GAN whose models come from builders of another module
    (train_on_batch/gan_builders.py, not given to tfdist) and reach the
    training function as parameters. tf-distribute: the builders' calls, the
    compiles and the combined model are placed in the strategy's scope (the
    generator's too: the combined model calls it), so every variable the
    steps update is mirrored, and the workers take the original's steps.
    Both engines: identical variables on every process, and the generator
    (a model only by being called on a Keras input) saved by rank 0 alone
    at the user's path."""
    script = CORRECTNESS / "train_on_batch" / "gan_models_from_module.py"
    result = convert_file(script, backend=backend)
    assert result.status == "converted", (result.error, result.error_line)
    assert not [w for w in result.warnings if w.level == "WARNING"], result.warnings
    converted = tmp_path / "converted" / script.name
    converted.parent.mkdir(parents=True)
    converted.write_bytes(result.data)
    env = run_env()
    env["PYTHONPATH"] = os.pathsep.join(p for p in (str(script.parent), env.get("PYTHONPATH")) if p)
    common = dict(env=env, backend=backend)
    if backend == "tf-distribute":
        env["TF_USE_LEGACY_KERAS"] = "1"  # as the converted workers run (see _run_gan)
        common["python"] = _tfd_python()
    original, distributed = _run_original_and_converted(script, converted, tmp_path, 600, common)
    (ref,) = original.ranks
    ranks = sorted(distributed.ranks, key=lambda r: r.rank)
    assert [r.rank for r in ranks] == [0, 1]
    assert ranks[0].trainable_count == ref.trainable_count > 0
    assert len({r.trainable_sha256 for r in ranks}) == 1, [r.trainable_sha256 for r in ranks]
    if backend == "tf-distribute":
        assert {r.optimizer_steps for r in ranks} == {ref.optimizer_steps}, (ref.optimizer_steps, ranks)
    else:  # each rank its own batches, half the steps
        assert {r.optimizer_steps for r in ranks} == {ref.optimizer_steps // 2}, (ref.optimizer_steps, ranks)
    saved = "gan_generator.weights.h5"
    at_user_path = [[f.path for f in r.files if Path(f.path).name == saved
                     and Path(f.path).parent.resolve() == (tmp_path / "distributed").resolve()] for r in ranks]
    assert at_user_path[0] and not at_user_path[1], at_user_path
