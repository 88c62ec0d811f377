"""``tfdist job slurm`` / ``tfdist job kubernetes`` and ``tfdist run --slurm /
--jobset`` without a cluster: the sbatch scripts, each task's place from
SLURM_* variables, manifests for both engines and both Kubeflow API versions
validated against the official SDKs' typed models (tests/fast/kube_models.py),
and malformed options (clear error, exit 3, nothing written).  The real
Slurm runs are in tests/slow/test_slurm_jobs.py."""
from __future__ import annotations

import json
import os
import stat
import subprocess
import sys
import time
from pathlib import Path

import pytest
import yaml

from tfdist.cli import main
from tfdist.runtime import kubernetes, launcher, slurm, slurm_tasks
from tfdist.engine_choice import written_for as detect_backend

sys.path.insert(0, str(Path(__file__).resolve().parent))
import kube_models  # noqa: E402

SRC = str(Path(__file__).resolve().parents[2] / "src")
TF_DISTRIBUTE = '''import os
import tensorflow as tf
strategy = (tf.distribute.MultiWorkerMirroredStrategy() if "TF_CONFIG" in os.environ
            else tf.distribute.MirroredStrategy())
'''
HOROVOD = '''import tensorflow as tf
import horovod.tensorflow.keras as hvd
hvd.init()
'''


@pytest.fixture
def scripts(tmp_path):
    (tmp_path / "train_dist.py").write_text(TF_DISTRIBUTE)
    (tmp_path / "train_hvd.py").write_text(HOROVOD)
    (tmp_path / "plain.py").write_text("import tensorflow as tf\n")
    return tmp_path


def _files(directory: Path) -> set[str]:
    return {p.name for p in directory.iterdir()}


# --------------------------------------------------------------------------
# sbatch scripts
# --------------------------------------------------------------------------

def test_sbatch_script_tf_distribute_one_worker_per_srun_task(scripts, monkeypatch, capsys):
    monkeypatch.chdir(scripts)
    rc = main(["job", "slurm", "train_dist.py", "--nodes", "2", "--tasks-per-node", "4", "--gpus-per-task", "1",
               "--time", "2:00:00", "--partition", "gpu", "--account", "ml", "--cpus-per-task", "8",
               "-o", "job.sbatch", "--", "--epochs", "3"])
    assert rc == 0
    text = (scripts / "job.sbatch").read_text()
    for line in ("#SBATCH --nodes=2", "#SBATCH --ntasks-per-node=4", "#SBATCH --gpus-per-task=1",
                 "#SBATCH --time=2:00:00", "#SBATCH --partition=gpu", "#SBATCH --account=ml",
                 "#SBATCH --cpus-per-task=8", "#SBATCH --job-name=train_dist", f"#SBATCH --chdir={scripts}",
                 f"#SBATCH --output={scripts}/train_dist-%j.out", "set -euo pipefail", "export PYTHONUNBUFFERED=1"):
        assert line in text.splitlines(), line
    run = [x for x in text.splitlines() if x.startswith("srun ")]
    # the tasks run the batch script's own code (TFDIST_TASK), not tfdist
    assert run == [f'srun --kill-on-bad-exit=1 --distribution=block --label --ntasks=8 "$PYTHON" -c "$TFDIST_TASK" '
                   f"{scripts}/train_dist.py --epochs 3"]
    assert "export TFDIST_TASKS_PER_NODE=4" in text.splitlines()
    assert f"PYTHON={sys.executable}" in text.splitlines()
    assert os.stat(scripts / "job.sbatch").st_mode & stat.S_IXUSR
    assert subprocess.run(["bash", "-n", str(scripts / "job.sbatch")]).returncode == 0
    assert "sbatch" in capsys.readouterr().err


def test_sbatch_script_horovod_one_horovodrun_per_job(scripts, monkeypatch):
    monkeypatch.chdir(scripts)
    assert main(["job", "slurm", "train_hvd.py", "--nodes", "3", "--tasks-per-node", "2", "--gpus-per-task", "1",
                 "-o", "hvd.sbatch"]) == 0
    text = (scripts / "hvd.sbatch").read_text()
    # every rank a Slurm task (issue 40): srun, no horovodrun, no ssh; the rendezvous started first
    assert not [x for x in text.splitlines() if x.split(" ", 1)[0] in ("horovodrun", "ssh", "mpirun")]
    assert "#SBATCH --gpus-per-node=2" in text.splitlines()
    srun = [x for x in text.splitlines() if x.startswith("srun ")]
    assert srun == [f'srun --kill-on-bad-exit=1 --distribution=block --label --ntasks=6 "$PYTHON" -c "$TFDIST_TASK" '
                    f"{scripts}/train_hvd.py"]
    assert text.index("HOROVOD_GLOO_RENDEZVOUS_PORT=") < text.index("srun ")
    assert subprocess.run(["bash", "-n", str(scripts / "hvd.sbatch")]).returncode == 0
    # tfdist's own --record / --timeout: each task runs `tfdist run --slurm`, one rank each
    assert main(["job", "slurm", "train_hvd.py", "--nodes", "3", "--tasks-per-node", "2", "--timeout", "60",
                 "-o", "hvd.sbatch"]) == 0
    srun = [x for x in (scripts / "hvd.sbatch").read_text().splitlines() if x.startswith("srun ")]
    assert srun == [f'srun --kill-on-bad-exit=1 --distribution=block --ntasks=6 "$PYTHON" -m tfdist run --backend '
                    f"horovod --slurm --timeout 60 {scripts}/train_hvd.py"]


def test_a_task_is_the_horovod_rank_horovodrun_would_make(tmp_path):
    """The HOROVOD_* variables a task gives itself: what horovodrun gives the
    rank of the same slot (its own host assignment, from the same hosts)."""
    assignments = pytest.importorskip("horovod.runner.common.util.hosts")  # Not a missing stack: a cross-check
    plan = assignments.get_host_assignments(assignments.parse_hosts("gpu07:2,gpu08:2"), 4)
    for slot in plan:
        env = dict(_step_env(slot.rank, slot.local_rank), TFDIST_NODES="gpu07,gpu08", TFDIST_TASKS_PER_NODE="2",
                   HOROVOD_GLOO_RENDEZVOUS_ADDR="gpu07", HOROVOD_GLOO_RENDEZVOUS_PORT="4321")
        got = slurm_tasks.horovod_rank_env(env)
        assert got["HOROVOD_HOSTNAME"] == slot.hostname and int(got["HOROVOD_RANK"]) == slot.rank
        assert (int(got["HOROVOD_LOCAL_RANK"]), int(got["HOROVOD_LOCAL_SIZE"])) == (slot.local_rank, slot.local_size)
        assert (int(got["HOROVOD_CROSS_RANK"]), int(got["HOROVOD_CROSS_SIZE"])) == (slot.cross_rank, slot.cross_size)
        assert int(got["HOROVOD_SIZE"]) == slot.size and got["HOROVOD_CONTROLLER"] == "gloo"
    with pytest.raises(SystemExit, match="rendezvous"):
        slurm_tasks.horovod_rank_env(dict(_step_env(0, 0), TFDIST_NODES="gpu07,gpu08", TFDIST_TASKS_PER_NODE="2"))


def test_sbatch_environment_is_explicit(tmp_path, scripts):
    """The job's interpreter: its venv activated, or --setup lines instead;
    tfdist put on PYTHONPATH exactly when that interpreter imports another one."""
    venv = tmp_path / "venv"
    (venv / "bin").mkdir(parents=True)
    (venv / "pyvenv.cfg").write_text("home = /usr/bin\n")
    (venv / "bin" / "activate").write_text("")
    python = venv / "bin" / "python"
    spec = slurm.JobSpec(script=str(scripts / "train_dist.py"), backend="tf-distribute", python=str(python))
    text = slurm.sbatch_script(spec)
    assert f"source {venv}/bin/activate" in text and "PYTHONPATH" not in text
    spec.setup = ["module load tensorflow/2.15"]
    spec.pythonpath = "/opt/tfdist/src"
    text = slurm.sbatch_script(spec)
    assert "module load tensorflow/2.15" in text and "activate" not in text
    assert "export PYTHONPATH=/opt/tfdist/src${PYTHONPATH:+:$PYTHONPATH}" in text


def _fake_python(path: Path, prints: str) -> str:
    path.write_text(f"#!/bin/sh\necho {prints}\n")
    path.chmod(0o755)
    return str(path)


def test_tfdist_pythonpath_for_asks_the_interpreter(tmp_path):
    here = launcher.tfdist_pythonpath()
    assert slurm.tfdist_pythonpath_for(_fake_python(tmp_path / "same", here)) is None
    assert slurm.tfdist_pythonpath_for(_fake_python(tmp_path / "other", "/elsewhere/src")) == here
    assert slurm.tfdist_pythonpath_for(str(tmp_path / "missing")) == here


def test_engine_is_read_from_the_script(scripts, monkeypatch, capsys):
    assert detect_backend(TF_DISTRIBUTE) == "tf-distribute" and detect_backend(HOROVOD) == "horovod"
    assert detect_backend("import tensorflow as tf\n") is None
    monkeypatch.chdir(scripts)
    assert main(["job", "slurm", "train_hvd.py", "--backend", "tf-distribute", "-o", "x.sbatch"]) == 3
    assert "is a horovod script" in capsys.readouterr().err
    assert main(["job", "slurm", "plain.py", "-o", "x.sbatch"]) == 3
    assert "is not a converted script" in capsys.readouterr().err
    assert not (scripts / "x.sbatch").exists()


@pytest.mark.parametrize("scheduler", [["slurm"], ["kubernetes", "--workers", "2", "--image", "img:1"]])
def test_an_unconverted_script_is_refused_even_with_an_engine_unless_allowed(scripts, monkeypatch, capsys, scheduler):
    """``--backend`` once started N independent trainings of a script never
    converted, without a word (issue 40): refused, naming what would happen;
    --allow-unconverted runs it as it is, and the job's own run says so too."""
    monkeypatch.chdir(scripts)
    assert main(["job", *scheduler, "plain.py", "--backend", "tf-distribute", "-o", "x.out"]) == 3
    message = capsys.readouterr().err
    assert "is not a converted script" in message and "separate trainings" in message and "--allow-unconverted" in message
    assert not (scripts / "x.out").exists()
    timeout = ["--timeout", "60"] if scheduler == ["slurm"] else []  # a job whose tasks run `tfdist run`
    assert main(["job", *scheduler, "plain.py", "--backend", "tf-distribute", "--allow-unconverted", *timeout,
                 "-o", "x.out"]) == 0
    assert scheduler != ["slurm"] or "--allow-unconverted" in (scripts / "x.out").read_text()


@pytest.mark.parametrize("scheduler", [["slurm"], ["kubernetes", "--workers", "2", "--image", "img:1"]])
def test_a_syntax_error_is_reported_as_one_with_its_line(scripts, monkeypatch, capsys, scheduler):
    monkeypatch.chdir(scripts)
    (scripts / "broken.py").write_text("import horovod.tensorflow as hvd\n\ndef f(:\n    pass\n")
    assert main(["job", *scheduler, "broken.py", "-o", "x.out"]) == 3
    message = capsys.readouterr().err
    assert "broken.py:3: syntax error" in message and "neither" not in message
    assert not (scripts / "x.out").exists()


def test_each_scheduler_s_help_is_its_own(capsys):
    for scheduler, own, other in (("slurm", "tfdist job slurm train.py", "kubernetes"),
                                  ("kubernetes", "tfdist job kubernetes train.py", "--wait")):
        with pytest.raises(SystemExit):
            main(["job", scheduler, "--help"])
        text = capsys.readouterr().out
        assert own in text and other not in text.split("positional arguments")[-1], text


def test_sbatch_values_with_spaces_are_quoted(scripts, monkeypatch, capsys):
    """A script path with a space made ``#SBATCH --job-name=k s`` (sbatch:
    "Invalid directive"); every value of an #SBATCH line is quoted where it
    needs it."""
    monkeypatch.chdir(scripts)
    (scripts / "k s.py").write_text((scripts / "train_hvd.py").read_text())
    (scripts / "my dir").mkdir()
    assert main(["job", "slurm", "k s.py", "--workdir", "my dir", "-o", "x.sbatch"]) == 0
    directives = [line for line in (scripts / "x.sbatch").read_text().splitlines() if line.startswith("#SBATCH")]
    assert '#SBATCH --job-name="k s"' in directives
    assert any(line.startswith('#SBATCH --chdir="') and line.endswith('my dir"') for line in directives), directives
    assert any(line.startswith('#SBATCH --output="') for line in directives), directives
    assert "#SBATCH --nodes=1" in directives


@pytest.mark.parametrize("options, message", [
    (["--nodes", "0"], "--nodes 0: a job needs at least 1 node"),
    (["--tasks-per-node", "0"], "--tasks-per-node 0: each node needs at least 1 task"),
    (["--time", "2h"], "--time '2h': Slurm's forms are MINUTES"),
    (["--time", "1:2:3:4"], "--time '1:2:3:4'"),
    (["--gpus-per-task", "-1"], "--gpus-per-task -1"),
    (["--partition", "gpu; rm -rf"], "--partition 'gpu; rm -rf'"),
    (["--wait"], "--wait goes with --submit"),
    (["--python", "/no/such/python"], "--python /no/such/python: not an executable file"),
])
def test_slurm_malformed_options_write_nothing(scripts, monkeypatch, capsys, options, message):
    monkeypatch.chdir(scripts)
    before = _files(scripts)
    assert main(["job", "slurm", "train_dist.py", *options]) == 3
    err = capsys.readouterr().err
    assert message in err and "nothing written" in err
    assert _files(scripts) == before


def test_slurm_missing_script(scripts, monkeypatch, capsys):
    monkeypatch.chdir(scripts)
    assert main(["job", "slurm", "nope.py"]) == 3
    assert "no such script: nope.py" in capsys.readouterr().err


@pytest.mark.parametrize("value", ["30", "30:00", "2:00:00", "1-12", "1-12:30", "1-12:30:00"])
def test_slurm_time_forms(scripts, value):
    spec = slurm.JobSpec(script=str(scripts / "train_dist.py"), time=value)
    assert spec.problems() == []


# --------------------------------------------------------------------------
# Each task's place in a job (what `tfdist run --slurm` does under srun)
# --------------------------------------------------------------------------

def test_slurm_lists():
    assert slurm.expand_hostlist("node[01-03,07],gpu[1-2]x,login") == [
        "node01", "node02", "node03", "node07", "gpu1x", "gpu2x", "login"]
    assert slurm.expand_counts("2(x3),1") == [2, 2, 2, 1]
    with pytest.raises(slurm.SlurmError):
        slurm.expand_hostlist("node[1-")
    with pytest.raises(slurm.SlurmError):
        slurm.expand_counts("2x3")


def _step_env(procid: int, localid: int, **extra) -> dict:
    env = {"SLURM_JOB_ID": "4242", "SLURM_STEP_ID": "0", "SLURM_PROCID": str(procid), "SLURM_NTASKS": "4",
           "SLURM_LOCALID": str(localid), "SLURM_STEP_NODELIST": "gpu[07-08]", "SLURM_STEP_TASKS_PER_NODE": "2(x2)"}
    env.update(extra)
    return env


def test_step_workers_tf_config_from_slurm_variables():
    workers = slurm.step_workers(_step_env(3, 1))
    base = slurm.port_base(4242, 0, 2)
    cluster = [f"gpu07:{base}", f"gpu07:{base + 1}", f"gpu08:{base}", f"gpu08:{base + 1}"]
    assert [w.local for w in workers] == [False, False, False, True]
    assert json.loads(workers[3].tf_config) == {"cluster": {"worker": cluster}, "task": {"type": "worker", "index": 3}}
    # every task computes the same cluster
    assert all(json.loads(w.tf_config)["cluster"]["worker"] == cluster
               for w in slurm.step_workers(_step_env(0, 0)))
    assert json.loads(slurm.step_workers(_step_env(0, 0, TFDIST_SLURM_PORT="30000"))[0].tf_config)[
        "cluster"]["worker"][1] == "gpu07:30001"


def test_port_bases_of_consecutive_jobs_and_steps_do_not_overlap():
    bases = [slurm.port_base(job, step, 4) for job in range(1000, 1050) for step in range(3)]
    assert len(set(bases)) == len(bases)
    assert all(slurm.PORT_LOW <= b and b + 16 <= slurm.PORT_HIGH for b in bases)


def test_step_workers_refuse_what_they_cannot_place():
    with pytest.raises(slurm.SlurmError, match="not inside a Slurm job step"):
        slurm.step_workers({"SLURM_JOB_ID": "1"})
    with pytest.raises(slurm.SlurmError, match="distribution=block"):
        slurm.step_workers(_step_env(1, 0))      # cyclic placement
    with pytest.raises(slurm.SlurmError, match="SLURM_NTASKS=3"):
        slurm.step_workers(_step_env(0, 0, SLURM_NTASKS="3"))


def test_horovod_hosts_from_the_allocation():
    assert slurm.horovod_hosts({"SLURM_JOB_NODELIST": "cn[1-2],big", "SLURM_TASKS_PER_NODE": "2(x2),4"}) == (
        8, "cn1:2,cn2:2,big:4")
    with pytest.raises(slurm.SlurmError):
        slurm.horovod_hosts({})


def _run_cli(args: list[str], env: dict, cwd) -> subprocess.CompletedProcess:
    full = {k: v for k, v in os.environ.items() if not k.startswith("SLURM_") and k != "TF_CONFIG"}
    full.update(env)
    full["PYTHONPATH"] = SRC
    return subprocess.run([sys.executable, "-m", "tfdist.runtime.commands", *args], env=full, cwd=cwd, capture_output=True,
                          text=True, timeout=120)


def test_run_under_srun_starts_this_tasks_worker_only(tmp_path):
    """What every srun task of the generated script runs: one worker, its
    TF_CONFIG from the SLURM_* variables, output prefixed with its rank."""
    script = tmp_path / "show.py"
    script.write_text("import os\nprint(os.environ['TF_CONFIG'])\n")
    proc = _run_cli(["run", "--allow-unconverted", "--backend", "tf-distribute", str(script)], _step_env(2, 0), tmp_path)
    assert proc.returncode == 0, proc.stderr
    (line,) = [x for x in proc.stdout.splitlines() if x.startswith("[2]<stdout>:")]
    config = json.loads(line.split(":", 1)[1])
    assert config["task"] == {"type": "worker", "index": 2} and len(config["cluster"]["worker"]) == 4
    fails = tmp_path / "fails.py"
    fails.write_text("raise SystemExit(7)\n")
    proc = _run_cli(["run", "--allow-unconverted", "--backend", "tf-distribute", "--slurm", str(fails)], _step_env(1, 1), tmp_path)
    assert proc.returncode == 7 and "worker 1 exited 7" in proc.stderr


def test_sigterm_takes_the_worker_down(tmp_path):
    """scancel / srun --kill-on-bad-exit send SIGTERM to `tfdist run`; its
    worker runs in a session of its own and must not outlive it."""
    script = tmp_path / "sleeps.py"
    pid_file = tmp_path / "worker.pid"
    script.write_text(f"import os, time\nopen({str(pid_file)!r}, 'w').write(str(os.getpid()))\ntime.sleep(60)\n")
    env = {k: v for k, v in os.environ.items() if not k.startswith("SLURM_")}
    env.update(_step_env(0, 0), PYTHONPATH=SRC)
    proc = subprocess.Popen([sys.executable, "-m", "tfdist.runtime.commands", "run", "--allow-unconverted", "--backend", "tf-distribute",
                             str(script)], env=env, cwd=tmp_path, stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                            text=True)
    try:
        for _ in range(300):
            if pid_file.exists() and pid_file.read_text():
                break
            time.sleep(0.1)
        worker = int(pid_file.read_text())
        proc.terminate()
        _, err = proc.communicate(timeout=30)
    finally:
        proc.kill()
    assert proc.returncode == 143 and "terminated (SIGTERM)" in err, err
    for _ in range(300):  # up to 30 s on a loaded machine; the worker itself sleeps 60 s
        if not _alive(worker):
            break
        time.sleep(0.1)
    assert not _alive(worker), "the worker outlived tfdist run"


def _alive(pid: int) -> bool:
    try:
        with open(f"/proc/{pid}/stat") as fh:
            return fh.read().rsplit(")", 1)[1].split()[0] not in ("Z", "X")
    except OSError:
        return False


def test_run_slurm_refuses_what_the_job_decides(tmp_path):
    script = tmp_path / "s.py"
    script.write_text("pass\n")
    proc = _run_cli(["run", "--allow-unconverted", "--backend", "tf-distribute", "--slurm", "-H", "a:2", str(script)], _step_env(0, 0),
                    tmp_path)
    assert proc.returncode == 3 and "-H is not for --slurm" in proc.stderr
    proc = _run_cli(["run", "--allow-unconverted", "--backend", "horovod", str(script)], _step_env(0, 0), tmp_path)
    assert proc.returncode == 3 and "every task would start its own horovodrun" in proc.stderr
    proc = _run_cli(["run", "--allow-unconverted", str(script)], {}, tmp_path)
    assert proc.returncode == 3 and "-np N is required" in proc.stderr


def test_failed_task_report():
    text = "\n".join([
        "[0]<stdout>:epoch 1", "[1]<stderr>:Traceback (most recent call last):",
        '[1]<stderr>:  File "t.py", line 3, in <module>', "[1]<stderr>:ValueError: shard 1 missing",
        "tfdist run: the job failed (worker 1 exited 1); see the rank-prefixed output above",
        "[0]<stderr>:Terminated"])
    task, status, lines = slurm.failed_task(text)
    assert (task, status) == (1, 1) and lines[-1] == "[1]<stderr>:ValueError: shard 1 missing"
    result = slurm.JobResult("12", "FAILED", "1:0", "/o", 3.0, task, status, lines)
    assert result.returncode == 1
    assert "task 1 failed (exit 1):" in slurm.describe(result) and "ValueError: shard 1 missing" in slurm.describe(result)
    assert slurm.JobResult("12", "COMPLETED", "0:0", None, 1.0).returncode == 0
    assert slurm.JobResult("12", "CANCELLED", "0:15", None, 1.0).returncode == 143


# --------------------------------------------------------------------------
# Kubernetes manifests, validated by the SDK models
# --------------------------------------------------------------------------

def _manifest(scripts, monkeypatch, *options) -> tuple[str, list[dict]]:
    monkeypatch.chdir(scripts)
    assert main(["job", "kubernetes", "-o", "m.yaml", *options]) == 0
    text = (scripts / "m.yaml").read_text()
    return text, [d for d in yaml.safe_load_all(text) if d]


@pytest.mark.parametrize("api", ["v2", "v1"])
@pytest.mark.parametrize("script, extra", [
    ("train_dist.py", []), ("train_dist.py", ["--gpus-per-worker", "2", "--cpu", "8", "--memory", "32Gi"]),
    ("train_hvd.py", []), ("train_hvd.py", ["--procs-per-worker", "4", "--gpus-per-worker", "1"])])
def test_manifests_validate_against_the_sdk_models(scripts, monkeypatch, api, script, extra):
    text, docs = _manifest(scripts, monkeypatch, script, "--workers", "4", "--image", "my/image:tag", "--api", api,
                           "--namespace", "team-a", *extra, "--", "--epochs", "2")
    for doc in docs:
        kube_models.validate(doc)
    kinds = [d["kind"] for d in docs]
    if api == "v2":
        assert kinds == ["TrainingRuntime", "TrainJob"]
        runtime, job = docs
        assert job["spec"]["runtimeRef"] == {"apiGroup": "trainer.kubeflow.org", "kind": "TrainingRuntime",
                                             "name": runtime["metadata"]["name"]}
        assert job["spec"]["trainer"]["numNodes"] == 4 and job["metadata"]["namespace"] == "team-a"
        command = job["spec"]["trainer"]["command"]
        if script == "train_hvd.py":
            assert "mpi" in runtime["spec"]["mlPolicy"] and command[:4] == [
                "mpirun", "--allow-run-as-root", "-np", str(4 * job["spec"]["trainer"]["numProcPerNode"])]
        else:
            assert "mpi" not in runtime["spec"]["mlPolicy"]
            assert command[:5] == ["python", "-c", kubernetes.POD_TASK, "4", str(kubernetes.TF_PORT)]
        assert command[-3:] == [f"/workspace/{script}", "--epochs", "2"]
        assert "Kubeflow Trainer v2" in text.splitlines()[0]
    else:
        assert kinds == (["TFJob"] if script == "train_dist.py" else ["MPIJob"])
        assert "Training Operator v1" in text.splitlines()[0]


def test_the_done_when_manifest(scripts, monkeypatch, capsys):
    """`tfdist job kubernetes train_dist.py --workers 4 --image my/image:tag`: the default file name."""
    monkeypatch.chdir(scripts)
    assert main(["job", "kubernetes", "train_dist.py", "--workers", "4", "--image", "my/image:tag"]) == 0
    docs = [d for d in yaml.safe_load_all((scripts / "train-dist-trainjob.yaml").read_text()) if d]
    for doc in docs:
        kube_models.validate(doc)
    assert "kubectl apply -f" in capsys.readouterr().err


def test_the_validation_catches_what_it_should(scripts, monkeypatch):
    _, docs = _manifest(scripts, monkeypatch, "train_hvd.py", "--workers", "2", "--image", "i:1", "--api", "v1")
    bad = json.loads(json.dumps(docs[0]))
    bad["spec"]["mpiReplicaSpecs"]["Worker"]["template"]["spec"]["containers"][0]["imagee"] = "typo"
    with pytest.raises(AssertionError):
        kube_models.validate(bad)
    _, docs = _manifest(scripts, monkeypatch, "train_dist.py", "--workers", "2", "--image", "i:1")
    bad = json.loads(json.dumps(docs[1]))
    bad["spec"]["trainer"]["numNodes"] = "2"
    with pytest.raises(Exception, match="numNodes"):
        kube_models.validate(bad)


@pytest.mark.parametrize("options, message", [
    (["--workers", "0", "--image", "i:1"], "--workers 0: a job needs at least 1 worker pod"),
    (["--workers", "2"], "--image IMAGE is required"),
    (["--workers", "2", "--image", " "], "--image IMAGE is required"),
    (["--workers", "2", "--image", "i:1", "--name", "Bad_Name"], "--name 'Bad_Name'"),
    (["--workers", "2", "--image", "i:1", "--memory", "lots"], "--memory 'lots'"),
    (["--workers", "2", "--image", "i:1", "--procs-per-worker", "2"], "--procs-per-worker is for --backend horovod"),
    (["--workers", "2", "--image", "i:1", "--workdir", "rel/dir"], "--workdir 'rel/dir'"),
])
def test_kubernetes_malformed_options_write_nothing(scripts, monkeypatch, capsys, options, message):
    monkeypatch.chdir(scripts)
    before = _files(scripts)
    assert main(["job", "kubernetes", "train_dist.py", *options]) == 3
    err = capsys.readouterr().err
    assert message in err and "nothing written" in err
    assert _files(scripts) == before
    with pytest.raises(kubernetes.ManifestError):
        kubernetes.manifests(kubernetes.KubeSpec(script="t.py", image=None, workers=0))


def test_jobset_workers_in_a_trainjob_pod():
    env = {"JOBSET_NAME": "train-dist", "JOB_COMPLETION_INDEX": "2"}
    workers = kubernetes.jobset_workers(4, env)
    config = json.loads(workers[2].tf_config)
    assert config["cluster"]["worker"] == [f"train-dist-node-0-{i}.train-dist:2222" for i in range(4)]
    assert config["task"]["index"] == 2 and [w.local for w in workers] == [False, False, True, False]
    with pytest.raises(launcher.HostsError, match="JOBSET_NAME"):
        kubernetes.jobset_workers(4, {})


def test_yaml_emitter_round_trips():
    doc = {"a": [{"b": 1, "c": ["x", "-m", "yes", "", "1"]}, [1, 2]], "d": {}, "e": [], "f": None, "g": True,
           "h": "metadata.labels['x']", "i": {"nvidia.com/gpu": "2"}}
    assert yaml.safe_load(kubernetes.to_yaml([doc]).split("---\n", 1)[1]) == doc


def test_free_ports_are_distinct_bindable_and_below_the_ephemeral_range():
    """Ports the kernel gives outgoing connections (its ephemeral range) may be
    taken by another cluster's gRPC channels before a worker listens on them:
    local workers get ports just below that range."""
    import socket

    low, _ = launcher.ephemeral_port_range()
    for _ in range(20):
        ports = launcher.free_ports(3)
        assert len(set(ports)) == 3
        assert all(max(1024, low - launcher.LISTEN_PORT_SPAN) <= p < low for p in ports), ports
        held = []
        try:
            for p in ports:
                s = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
                held.append(s)
                s.bind(("127.0.0.1", p))  # free right after free_ports released them
        finally:
            for s in held:
                s.close()


@pytest.mark.parametrize("api,backend,workers,suffix", [
    ("v2", "tf-distribute", 4, "-node-0-3"),      # JobSet: <jobset>-<replicated job>-<job index>-<pod index>
    ("v2", "horovod", 4, "-launcher-0-0"),
    ("v2", "tf-distribute", 100, "-node-0-99"),
    ("v1", "tf-distribute", 12, "-worker-11"),     # Training Operator: <job>-<replica type>-<index>
    ("v1", "horovod", 2, "-launcher"),
])
def test_a_job_name_leaves_room_for_the_pods_host_names(api, backend, workers, suffix):
    """A 63-character --name made pod host names of 72 characters (a DNS
    label is at most 63): the name may be at most 63 minus the longest
    suffix the operator adds, and a default name is cut to fit."""
    spec = kubernetes.KubeSpec(script="train.py", image="img:1", workers=workers, backend=backend, api=api)
    assert len(spec.longest_pod_suffix) == len(suffix)
    fits = "a" * (63 - len(suffix))
    spec.name = fits
    assert not [p for p in spec.problems() if "--name" in p]
    spec.name = fits + "b"
    assert any("host name is at most 63" in p for p in spec.problems()), spec.problems()
    spec.name = None
    spec.script = "x" * 80 + ".py"
    assert len(spec.job_name) + len(suffix) <= 63 and not [p for p in spec.problems() if "--name" in p]


def test_scontrol_fields_keep_values_with_spaces():
    line = ("JobId=7 JobName=k s UserId=root(0) JobState=COMPLETED Reason=None ExitCode=0:0 "
            "WorkDir=/tmp/my dir StdOut=/tmp/my dir/k s-7.out TRES=cpu=1,node=1")
    info = slurm.parse_job_info(line)
    assert info["JobName"] == "k s" and info["StdOut"] == "/tmp/my dir/k s-7.out" and info["JobState"] == "COMPLETED"
    assert info["ExitCode"] == "0:0" and info["WorkDir"] == "/tmp/my dir" and info["TRES"] == "cpu=1,node=1"


@pytest.mark.parametrize("procid,localid,extra", [(0, 0, {}), (3, 1, {}), (2, 0, {"TFDIST_SLURM_PORT": "30000"})])
def test_the_task_code_a_batch_script_carries_builds_tfdist_run_s_tf_config(tmp_path, procid, localid, extra):
    """A tf-distribute job's tasks run the batch script's own few lines of
    standard-library Python, not tfdist (issue 40): the TF_CONFIG they give
    the script is the one ``tfdist run --slurm`` builds for the same task."""
    script = tmp_path / "dir with space" / "show.py"
    script.parent.mkdir()
    script.write_text("import os, sys\nprint(os.environ['TF_CONFIG'])\nprint(sys.argv[1:])\n")
    env = dict(_step_env(procid, localid, **extra), TFDIST_NODES="gpu07,gpu08", TFDIST_TASKS_PER_NODE="2",
               PATH=os.environ.get("PATH", ""))
    # a Python that cannot import tfdist: -I ignores PYTHONPATH and the user's site
    proc = subprocess.run([sys.executable, "-I", "-c", slurm_tasks.TF_DISTRIBUTE_TASK, str(script), "--epochs", "2"],
                          env=env, capture_output=True, text=True, timeout=60, cwd=tmp_path)
    assert proc.returncode == 0, proc.stderr
    shown, argv = proc.stdout.splitlines()
    expected = slurm.step_workers(_step_env(procid, localid, **extra))[procid].tf_config
    assert json.loads(shown) == json.loads(expected)
    assert argv == "['--epochs', '2']"


def test_a_task_placed_otherwise_than_block_distribution_stops_with_a_reason(tmp_path):
    script = tmp_path / "show.py"
    script.write_text("print('ran')\n")
    env = dict(_step_env(1, 0), TFDIST_NODES="gpu07,gpu08", TFDIST_TASKS_PER_NODE="2", PATH=os.environ.get("PATH", ""))
    proc = subprocess.run([sys.executable, "-I", "-c", slurm_tasks.TF_DISTRIBUTE_TASK, str(script)], env=env,
                          capture_output=True, text=True, timeout=60)
    assert proc.returncode != 0 and "--distribution=block" in proc.stderr and "ran" not in proc.stdout


def test_a_tf_distribute_batch_script_carries_its_tasks_code_unless_tfdist_s_features_are_asked():
    spec = slurm.JobSpec(script=__file__, backend="tf-distribute", nodes=2, tasks_per_node=2)
    text = slurm.sbatch_script(spec)
    assert '"$PYTHON" -c "$TFDIST_TASK"' in text and "-m tfdist" not in text and "--label" in text
    for option in ({"record": "/tmp/records"}, {"timeout": 60.0}):
        text = slurm.sbatch_script(slurm.JobSpec(script=__file__, backend="tf-distribute", **option))
        assert "-m tfdist run" in text and "TFDIST_TASK" not in text


def test_srun_label_output_names_the_failed_task_and_its_traceback():
    text = "\n".join(["0: epoch 1", "1: Traceback (most recent call last):", '1:   File "x.py", line 3',
                      "1: ValueError: task 1 cannot read its shard", "srun: error: node1: task 1: Exited with exit code 1"])
    task, status, lines = slurm.failed_task(text)
    assert (task, status) == (1, 1) and lines[-1].endswith("ValueError: task 1 cannot read its shard")


# Where Kubeflow Trainer v2 puts what a TrainJob asks, by upstream's code (kubeflow/trainer,
# commit 8c0f505, 2026-08-21), applied here to the manifests tfdist writes:
# - pkg/runtime/core/trainingruntime.go (TrainingRuntime.runtimeInfo): a replicated job labelled
#   trainer.kubeflow.org/trainjob-ancestor-step=trainer counts the *runtime's* mlPolicy.numNodes pods
#   (else its own parallelism, 1); trainer.resourcesPerNode is merged into the container named "node"
#   of that job and, when the MPI policy has runLauncherAsNode, of the job named "node".
# - pkg/runtime/framework/plugins/mpi/mpi.go (EnforceMLPolicy): the job "node" counts the TrainJob's
#   numNodes, minus 1 with runLauncherAsNode (the launcher is then a node: isNode()).
# - pkg/runtime/framework/plugins/jobset/builder.go (Builder.Trainer): the TrainJob's command and
#   image go to the "node" container of the job labelled trainer.
ANCESTOR = "trainer.kubeflow.org/trainjob-ancestor-step"


def _upstream_pods(runtime: dict, job: dict) -> dict:
    """replicated job -> (pods, gets resourcesPerNode, runs the TrainJob's command, runs ranks)."""
    policy = runtime["spec"]["mlPolicy"]
    mpi = policy.get("mpi") or {}
    as_node = bool(mpi.get("runLauncherAsNode"))
    trainer = job["spec"]["trainer"]
    out = {}
    for rjob in runtime["spec"]["template"]["spec"]["replicatedJobs"]:
        labelled = (rjob["template"].get("metadata") or {}).get("labels", {}).get(ANCESTOR) == "trainer"
        count = policy.get("numNodes", 1) if labelled else 1
        if mpi and rjob["name"] == "node":
            count = max(trainer["numNodes"] - 1, 1) if as_node else trainer["numNodes"]
        elif not mpi and labelled:
            count = trainer["numNodes"]   # plain ML policy: the trainer job counts the TrainJob's numNodes
        containers = [c["name"] for c in rjob["template"]["spec"]["template"]["spec"]["containers"]]
        resources = "node" in containers and (labelled or (as_node and rjob["name"] == "node"))
        ranks = rjob["name"] == "node" or (as_node and rjob["name"] == "launcher") or not mpi
        out[rjob["name"]] = (count, resources, labelled and "node" in containers, ranks)
    return out


@pytest.mark.parametrize("workers,procs", [(2, 1), (4, 2)])
def test_trainer_v2_mpi_places_gpus_where_the_ranks_run_and_starts_one_launcher(scripts, monkeypatch, workers,
                                                                                 procs):
    """Issue 40: the node pods running the ranks got no GPUs (resourcesPerNode went to the launcher)
    and the runtime's numNodes of N made N launchers."""
    _, (runtime, job) = _manifest(scripts, monkeypatch, "train_hvd.py", "--workers", str(workers), "--image", "i:1",
                                  "--procs-per-worker", str(procs), "--gpus-per-worker", "1", "--cpu", "4")
    pods = _upstream_pods(runtime, job)
    assert pods["launcher"][0] == 1                                        # one launcher
    assert pods["launcher"][2] and job["spec"]["trainer"]["command"][0] == "mpirun"
    rank_pods = sum(count for count, _, _, ranks in pods.values() if ranks)
    assert rank_pods == workers                                            # N pods run ranks
    assert all(resources for _, resources, _, ranks in pods.values() if ranks)   # each with its GPUs
    assert job["spec"]["trainer"]["resourcesPerNode"]["limits"]["nvidia.com/gpu"] == str(procs)
    assert "--allow-run-as-root" in job["spec"]["trainer"]["command"]      # the pods run as root
    assert runtime["spec"]["mlPolicy"]["mpi"]["sshAuthMountPath"] == "/root/.ssh"


def test_trainer_v2_tf_distribute_runs_every_worker_with_resources(scripts, monkeypatch):
    _, (runtime, job) = _manifest(scripts, monkeypatch, "train_dist.py", "--workers", "3", "--image", "i:1",
                                  "--gpus-per-worker", "2")
    pods = _upstream_pods(runtime, job)
    assert pods == {"node": (3, True, True, True)}


def test_v1_mpijob_gives_the_workers_the_gpus_and_runs_mpirun_as_root(scripts, monkeypatch):
    """Training Operator v1 (release 1.9): the MPIJob's Launcher runs mpirun, its Worker replicas the ranks
    (pkg/controller.v1/mpi: the hostfile lists the workers, slotsPerWorker each)."""
    _, (mpijob,) = _manifest(scripts, monkeypatch, "train_hvd.py", "--workers", "3", "--image", "i:1", "--api", "v1",
                             "--procs-per-worker", "2", "--gpus-per-worker", "1")
    specs = mpijob["spec"]["mpiReplicaSpecs"]
    launcher = specs["Launcher"]["template"]["spec"]["containers"][0]
    worker = specs["Worker"]["template"]["spec"]["containers"][0]
    assert specs["Launcher"]["replicas"] == 1 and specs["Worker"]["replicas"] == 3
    assert "resources" not in launcher and worker["resources"]["limits"]["nvidia.com/gpu"] == "2"
    assert launcher["command"][:2] == ["mpirun", "--allow-run-as-root"]


@pytest.mark.parametrize("index", [0, 2])
def test_the_pod_code_a_trainjob_carries_builds_tfdist_run_jobset_s_tf_config(tmp_path, index):
    """A Trainer v2 tf-distribute pod runs the manifest's own lines, not tfdist (issue 40): the
    TF_CONFIG they give the script is the one ``tfdist run --jobset`` builds for the same pod."""
    script = tmp_path / "show.py"
    script.write_text("import os, sys\nprint(os.environ['TF_CONFIG'])\nprint(sys.argv[1:])\n")
    env = {"JOBSET_NAME": "train-dist", "JOB_COMPLETION_INDEX": str(index), "PATH": os.environ.get("PATH", "")}
    proc = subprocess.run([sys.executable, "-I", "-c", kubernetes.POD_TASK, "3", "2222", str(script), "--epochs", "2"],
                          env=env, capture_output=True, text=True, timeout=60)
    assert proc.returncode == 0, proc.stderr
    shown, argv = proc.stdout.splitlines()
    assert json.loads(shown) == json.loads(kubernetes.jobset_workers(3, env, 2222)[index].tf_config)
    assert argv == "['--epochs', '2']"
