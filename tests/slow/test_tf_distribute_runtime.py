"""`tfdist run --backend tf-distribute` and `tfdist verify --backend
tf-distribute` on the TensorFlow 2.21 stack (Keras 3, tf-keras for
multi-worker Model.fit).

pytest itself runs in the Horovod stack (TensorFlow 2.15); these tests start
the TensorFlow 2.21 environment's ``tfdist`` as subprocesses.  Its path comes
from TFDIST_TF_DISTRIBUTE_VENV, which `bash scripts/test.sh` always exports
(after building the environment with `bash scripts/setup_runtime.sh
tf-distribute`).  The scripts in tf_distribute_scripts/ are hand-written in
the shape tfdist's tf-distribute conversion produces.
"""
from __future__ import annotations

import json
import os
import socket
import subprocess
import time
from pathlib import Path

import pytest

from conftest import Completed, cli_env, missing_stack, pid_alive
from tfdist.runtime import launcher

pytestmark = pytest.mark.slow

TFD = Path(__file__).resolve().parent / "tf_distribute_scripts"
FIT = TFD / "keras_fit.py"
TAPE = TFD / "tape.py"
VENV_ENV = "TFDIST_TF_DISTRIBUTE_VENV"


@pytest.fixture(scope="session")
def tfd_venv() -> Path:
    value = os.environ.get(VENV_ENV)
    if not value:
        missing_stack(f"{VENV_ENV} is not set: the TensorFlow 2.21 stack is built and exported by "
                    "`bash scripts/test.sh` (or `bash scripts/setup_runtime.sh tf-distribute`)")
    venv = Path(value)
    if not (venv / "bin" / "tfdist").exists():
        pytest.fail(f"{VENV_ENV}={venv} has no bin/tfdist: rebuild it with "
                    "`bash scripts/setup_runtime.sh tf-distribute`")
    return venv


def tfdist(venv: Path, args: list[str], cwd, timeout: float = 240, env: dict | None = None) -> Completed:
    """The TensorFlow 2.21 environment's ``tfdist`` entry point."""
    start = time.monotonic()
    proc = subprocess.run([str(venv / "bin" / "tfdist"), *args], cwd=cwd, env=env or cli_env(),
                          capture_output=True, text=True, timeout=timeout)
    return Completed(proc, time.monotonic() - start)


def verify_json(venv: Path, script: Path, args: list[str], tmp_path, extra: list[str] = ()) -> dict:
    res = tfdist(venv, ["verify", "--backend", "tf-distribute", "--converted", "--json", "--timeout", "200",
                        *extra, str(script), *args], tmp_path, timeout=280)
    assert res.returncode in (0, 1), res
    report = json.loads(res.stdout)
    assert (report["result"] == "PASS") == (res.returncode == 0), res
    return report


def npz_digests(directory: Path, n: int) -> list[list[str]]:
    import hashlib

    import numpy as np

    out = []
    for rank in range(n):
        with np.load(directory / f"worker-{rank}.npz") as data:
            out.append([hashlib.sha256(np.ascontiguousarray(data[f"arr_{i}"]).tobytes()).hexdigest()
                        for i in range(len(data.files))])
    return out


def only_reason(report: dict, needle: str) -> str:
    assert report["result"] == "FAIL", report
    assert len(report["reasons"]) == 1, report["reasons"]
    assert needle in report["reasons"][0], report["reasons"]
    return report["reasons"][0]


# --------------------------------------------------------------------------
# tfdist run --backend tf-distribute
# --------------------------------------------------------------------------

@pytest.mark.timeout(120)
def test_run_writes_one_tf_config_per_worker_and_prefixes_output(tfd_venv, tmp_path):
    res = tfdist(tfd_venv, ["run", "--allow-unconverted", "--backend", "tf-distribute", "-np", "2", str(TFD / "hello_workers.py"),
                            "--flag", "x"], tmp_path, timeout=100)
    assert res.returncode == 0, res
    out = res.stdout.splitlines()
    clusters = set()
    for rank in (0, 1):
        line = next(l for l in out if l.startswith(f"[{rank}]<stdout>:hello from worker {rank} of 2; type=worker"))
        assert line.endswith("args=['--flag', 'x']"), res
        clusters.add(line.split("cluster=", 1)[1].split(" ", 1)[0])
        assert f"[{rank}]<stderr>:worker {rank} says hi on stderr" in out, res
    assert len(clusters) == 1, clusters                       # one cluster, both workers in it
    hosts = clusters.pop().split(",")
    assert [h.split(":")[0] for h in hosts] == ["localhost", "localhost"]
    assert len({h.split(":")[1] for h in hosts}) == 2         # two distinct free ports


@pytest.mark.timeout(200)
@pytest.mark.parametrize("script", [
    FIT,
    # a tape script under `tfdist run` also runs in test_examples_tf_distribute's convert-then-run
    # and test_verify_passes_tape_script_and_checks_samples (identical variables) in the slow tier
    pytest.param(TAPE, marks=pytest.mark.extended)], ids=["keras-fit", "tape"])
def test_run_trains_on_two_workers_with_identical_variables(tfd_venv, tmp_path, script):
    dump = tmp_path / "dump"
    dump.mkdir()
    res = tfdist(tfd_venv, ["run", "--backend", "tf-distribute", "-np", "2", "--timeout", "180", str(script),
                            "--dump", str(dump)], tmp_path, timeout=190)
    assert res.returncode == 0, res
    assert "[0]<stdout>:done chief" in res.stdout and "[1]<stdout>:done worker" in res.stdout, res
    d0, d1 = npz_digests(dump, 2)
    assert len(d0) == 4 and d0 == d1
    # Only the chief's files at the user's paths; the non-chief's temporary directories are gone.
    written = sorted(str(p.relative_to(tmp_path)) for p in tmp_path.rglob("*") if p.is_file()
                     and "dump" not in p.parts)
    assert not any("workertemp" in w for w in written), written
    if script == FIT:
        assert {"ckpt/weights.1.weights.h5", "ckpt/weights.2.weights.h5", "final.weights.h5"} <= set(written)
        assert "Epoch 2/2" in res.stdout and "[1]<stdout>:Epoch" not in res.stdout   # verbose on the chief only
    else:
        assert {"ckpt/model.index"} <= set(written)
        assert "[0]<stdout>:epoch 2: loss" in res.stdout and "[1]<stdout>:epoch" not in res.stdout
        assert "(12 steps)" in res.stdout                                           # 384 / 16 / 2


@pytest.mark.timeout(150)
def test_run_fails_fast_when_one_worker_raises(tfd_venv, tmp_path):
    # Worker 0 waits in an all-reduce that worker 1 never joins: only tfdist can stop it.
    res = tfdist(tfd_venv, ["run", "--backend", "tf-distribute", "-np", "2", "--timeout", "120",
                            str(TFD / "worker1_raises.py"), str(tmp_path)], tmp_path, timeout=140)
    assert res.returncode == 1, res
    assert res.seconds < 90, res
    assert "[1]<stderr>:RuntimeError: worker 1 failed on purpose" in res.stdout, res
    assert "[0]<stdout>:worker 0 of 2 started" in res.stdout, res
    assert "worker 0 was never stopped" not in res.stdout
    assert "tfdist run: the job failed (worker 1 exited 1; killed worker(s) 0)" in res.stderr, res
    pids = [int((tmp_path / f"pid-{r}").read_text()) for r in (0, 1)]
    assert not any(pid_alive(p) for p in pids), pids


@pytest.mark.timeout(120)
def test_run_timeout_kills_every_worker(tfd_venv, tmp_path):
    res = tfdist(tfd_venv, ["run", "--allow-unconverted", "--backend", "tf-distribute", "-np", "2", "--timeout", "10",
                            str(TFD / "sleeper.py"), str(tmp_path)], tmp_path, timeout=100)
    assert res.returncode == launcher.EXIT_TIMEOUT, res
    assert res.seconds < 40, res
    assert "tfdist run: error: timed out after 10s; killed the job" in res.stderr, res
    assert "[0]<stdout>:worker 0 sleeping" in res.stdout and "[1]<stdout>:worker 1 sleeping" in res.stdout, res
    pids = [int((tmp_path / f"pid-{r}").read_text()) for r in (0, 1)]
    assert not any(pid_alive(p) for p in pids), pids


def _free_port_block(n: int) -> int:
    """A base port whose next n ports look free (best effort)."""
    for _ in range(50):
        base = launcher.free_ports(1)[0]
        if base + n > 65535:
            continue
        try:
            socks = []
            for port in range(base, base + n):
                s = socket.socket()
                s.bind(("127.0.0.1", port))
                socks.append(s)
        except OSError:
            continue
        finally:
            for s in socks:
                s.close()
        return base
    # Not a missing stack but a busy machine (no free ports now), so a skip
    # even under .ci/run's TFDIST_REQUIRE_STACKS.
    pytest.skip("no block of free ports found")


@pytest.mark.timeout(200)
def test_two_hosts_each_started_with_this_host(tfd_venv, tmp_path):
    # Two names of this machine stand for two hosts: each tfdist starts only
    # its own host's worker, and together they train one model.
    port = _free_port_block(2)
    dump = tmp_path / "dump"
    dump.mkdir()
    procs = []
    for host in ("localhost", "127.0.0.1"):
        cwd = tmp_path / host
        cwd.mkdir()
        procs.append(subprocess.Popen(
            [str(tfd_venv / "bin" / "tfdist"), "run", "--backend", "tf-distribute", "-np", "2",
             "-H", "localhost:1,127.0.0.1:1", "--this-host", host, "--port", str(port), "--timeout", "150",
             str(TAPE), "--dump", str(dump)],
            cwd=cwd, env=cli_env(), stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True))
    outs = [p.communicate(timeout=180) for p in procs]
    for p, (out, err) in zip(procs, outs):
        assert p.returncode == 0, (out[-3000:], err[-3000:])
    assert "[0]<stdout>:done chief" in outs[0][0] and "[1]" not in outs[0][0]
    assert "[1]<stdout>:done worker" in outs[1][0] and "[0]" not in outs[1][0]
    assert "start the others on 127.0.0.1 with the same command plus --this-host HOST" in outs[0][1]
    d0, d1 = npz_digests(dump, 2)
    assert d0 == d1


def test_hosts_and_tf_config():
    assert launcher.parse_hosts("a:2, b:1,c") == [("a", 2), ("b", 1), ("c", 1)]
    for bad in ("a:0", "a:x", ":2", "a:1,a:2", ""):
        with pytest.raises(launcher.HostsError):
            launcher.parse_hosts(bad)
    workers = launcher.tf_distribute_workers(3, "localhost:2,remote-host:2", base_port=30000)
    assert [(w.rank, w.host, w.port, w.local) for w in workers] == [
        (0, "localhost", 30000, True), (1, "localhost", 30001, True), (2, "remote-host", 30002, False)]
    config = json.loads(workers[2].tf_config)
    assert config == {"cluster": {"worker": ["localhost:30000", "localhost:30001", "remote-host:30002"]},
                      "task": {"type": "worker", "index": 2}}
    only_remote = launcher.tf_distribute_workers(2, "localhost:1,remote-host:1", this_host="remote-host")
    assert [w.local for w in only_remote] == [False, True]
    with pytest.raises(launcher.HostsError, match="needs 3 slots"):
        launcher.tf_distribute_workers(3, "localhost:2")
    with pytest.raises(launcher.HostsError, match="none of the hosts is this machine"):
        launcher.tf_distribute_workers(2, "remote-a:1,remote-b:1")
    with pytest.raises(launcher.HostsError, match="--this-host"):
        launcher.tf_distribute_workers(2, "localhost:1,127.0.0.1:1")
    local = launcher.tf_distribute_workers(2)
    assert all(w.local and w.host == "localhost" for w in local) and local[0].port != local[1].port
    assert "TF_CONFIG" not in launcher.single_process_env({"TF_CONFIG": "{}", "PATH": "/bin"})


@pytest.mark.timeout(60)
def test_run_rejects_horovod_only_options(tfd_venv, tmp_path):
    res = tfdist(tfd_venv, ["run", "--allow-unconverted", "--backend", "tf-distribute", "-np", "2", "--mpi", str(TFD / "hello_workers.py")],
                 tmp_path, timeout=50)
    assert res.returncode == 3 and "--mpi is for --backend horovod" in res.stderr, res
    res = tfdist(tfd_venv, ["run", "--allow-unconverted", "--backend", "tf-distribute", "-np", "2", "-H",
                            "remote-a:1,remote-b:1", str(TFD / "hello_workers.py")], tmp_path, timeout=50)
    assert res.returncode == 3 and "none of the hosts is this machine" in res.stderr, res


# --------------------------------------------------------------------------
# tfdist verify --backend tf-distribute
# --------------------------------------------------------------------------

@pytest.mark.timeout(300)
@pytest.mark.extended   # the modern suite's fit items pass the same checks on 2 workers in the slow tier
def test_verify_passes_keras_fit_script(tfd_venv, tmp_path):
    report = verify_json(tfd_venv, FIT, [], tmp_path)
    assert report["result"] == "PASS", report["reasons"]
    ref = report["reference"]["ranks"][0]
    ranks = report["distributed"]["ranks"]
    assert report["distributed"]["backend"] == "tf-distribute"
    assert ref["optimizer_steps"] == 64                        # 512 / 16 x 2 epochs, Keras 3, one replica
    assert [r["optimizer_steps"] for r in ranks] == [32, 32]   # tf-keras under MultiWorkerMirroredStrategy
    assert [r["rank_source"] for r in ranks] == ["tf-config", "tf-config"]
    assert ranks[0]["trainable_sha256"] == ranks[1]["trainable_sha256"]
    assert ranks[0]["trainable_count"] == ref["trainable_count"] == 4
    assert [s["class"] for s in ranks[0]["strategies"]] == ["CollectiveAllReduceStrategy"]
    assert ranks[0]["strategies"][0]["num_workers"] == 2
    root = report["distributed"]["cwd"]
    chief = {os.path.relpath(f["path"], root): f["kind"] for f in ranks[0]["files"]}
    assert chief == {"ckpt/weights.1.weights.h5": "model", "ckpt/weights.2.weights.h5": "model",
                     "final.weights.h5": "model", "logs/train": "summary"}
    other = {os.path.relpath(f["path"], root): (f["multi_worker_temp"], f["exists_at_exit"]) for f in ranks[1]["files"]}
    assert other and all(v == (True, False) for v in other.values()), other
    assert any("multi-worker temporary directories they removed" in c for c in report["checks"])
    assert any("samples not checked" in w for w in report["warnings"])


@pytest.mark.timeout(300)
def test_verify_passes_tape_script_and_checks_samples(tfd_venv, tmp_path):
    report = verify_json(tfd_venv, TAPE, [], tmp_path)
    assert report["result"] == "PASS", report["reasons"]
    assert report["reference"]["ranks"][0]["optimizer_steps"] == 48   # 384 / 16 x 2 epochs
    ranks = report["distributed"]["ranks"]
    assert [r["optimizer_steps"] for r in ranks] == [24, 24]
    assert ranks[0]["trainable_sha256"] == ranks[1]["trainable_sha256"]
    assert ranks[1]["files"] == []                      # its checkpoint went to the system's temporary directory
    assert report["samples"]["source"] == "iterator"
    assert report["samples"]["first_epoch_overlap"] == 0 and report["samples"]["coverage"] == 1.0
    assert any(c.startswith("sample/label pairs intact") for c in report["checks"])


@pytest.mark.timeout(300)
def test_verify_fails_models_built_outside_the_scope(tfd_venv, tmp_path):
    report = verify_json(tfd_venv, TAPE, ["--break", "scope"], tmp_path)
    reason = only_reason(report, "final trainable variables differ between ranks")
    assert "rank 1 differs from rank 0 in 4 of 4 variables" in reason
    assert [r["optimizer_steps"] for r in report["distributed"]["ranks"]] == [24, 24]


@pytest.mark.timeout(300)
def test_verify_fails_data_not_divided(tfd_venv, tmp_path):
    report = verify_json(tfd_venv, TAPE, ["--break", "shard"], tmp_path)
    reason = only_reason(report, "optimizer steps per rank are not ~1/2 of the original's 48")
    assert "rank 0: 48, rank 1: 48" in reason and "auto-sharding switched off" in reason
    assert "the samples confirm it: every rank consumed the identical sequence of 768 samples" in reason
    ranks = report["distributed"]["ranks"]
    assert ranks[0]["trainable_sha256"] == ranks[1]["trainable_sha256"]


@pytest.mark.timeout(300)
def test_verify_fails_a_non_chief_writing_at_the_users_path(tfd_venv, tmp_path):
    report = verify_json(tfd_venv, FIT, ["--break", "checkpoint"], tmp_path)
    reason = only_reason(report, "only the chief (rank 0) may write checkpoints/summaries/models at the user's paths")
    assert reason.endswith("rank 1 wrote model files: worker1-final.weights.h5"), reason


@pytest.mark.timeout(300)
def test_verify_steps_cap_under_keras3_and_tf_keras(tfd_venv, tmp_path):
    report = verify_json(tfd_venv, FIT, [], tmp_path, extra=["--steps", "6"])
    assert report["result"] == "PASS", report["reasons"]
    ref = report["reference"]["ranks"][0]
    assert ref["steps_cap"]["applied"] and ref["optimizer_steps"] == 6 and ref["steps_cap"]["planned_steps"] == 64
    for r in report["distributed"]["ranks"]:
        assert r["steps_cap"]["applied"] and r["optimizer_steps"] == 3 and r["steps_cap"]["planned_steps"] == 32


@pytest.mark.timeout(300)
def test_verify_fails_a_script_that_ignores_tf_config(tfd_venv, tmp_path):
    # The original script (MirroredStrategy only) run as "converted": every
    # worker trains alone on everything.
    script = tmp_path / "single.py"
    script.write_text(TAPE.read_text().replace(
        'tf.distribute.MultiWorkerMirroredStrategy() if "TF_CONFIG" in os.environ\n            else ', ""))
    assert "MultiWorkerMirroredStrategy()" not in script.read_text()
    report = verify_json(tfd_venv, script, [], tmp_path)
    assert report["result"] == "FAIL"
    assert any("did not build a tf.distribute strategy spanning all 2 workers (rank 0: 1 worker(s), "
               "rank 1: 1 worker(s))" in r for r in report["reasons"]), report["reasons"]
