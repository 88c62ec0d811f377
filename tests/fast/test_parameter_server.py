"""tf-distribute --strategy parameter-server (issue 41): tf.distribute's
ParameterServerStrategy as a conversion target. The byte-for-byte fixtures
are checked with the others (expected.tf-distribute+parameter-server.py in
test_fixtures.py, the rule's example here); this file checks what they do not:
converting twice changes nothing, Keras 3 is refused with the upstream reason
and the edit, what is not converted is refused with its line, and the options."""
from __future__ import annotations

import ast
import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

from fixture_cases import glob
from tfdist import api
from tfdist.api import convert_source
from tfdist.options import Options, OptionsError

PS = "parameter-server"
SRC = Path(__file__).resolve().parents[2] / "src"
ENV = {**os.environ, "PYTHONPATH": os.pathsep.join([str(SRC), *filter(None, [os.environ.get("PYTHONPATH")])])}
CASES = sorted({p.parent for p in glob("*/*/expected.tf-distribute+parameter-server.py")}
               | {p.parent for p in glob("*/*/expected.parameter-server.py")})


def _convert(source: str, **options):
    return convert_source(source.encode(), "train.py", backend=Options(backend="tf-distribute", strategy=PS, **options))


def _expected(case):
    path = case / "expected.parameter-server.py"
    return path if path.exists() else case / "expected.tf-distribute+parameter-server.py"


def test_there_are_fixtures():
    assert len(CASES) >= 2, CASES


@pytest.mark.parametrize("case", CASES, ids=lambda p: f"{p.parent.name}/{p.name}")
def test_converts_to_expected_and_converting_twice_changes_nothing(case):
    result = convert_source((case / "input.py").read_bytes(), str(case / "input.py"), backend=PS)
    assert result.status == "converted", result.error
    assert result.data == _expected(case).read_bytes()
    again = convert_source(result.data, "expected.py", backend=PS)
    assert again.status == "already-distributed"
    assert again.data == result.data


@pytest.mark.parametrize("case", CASES, ids=lambda p: f"{p.parent.name}/{p.name}")
def test_one_file_for_every_task(case):
    """Workers and parameter servers start their server and join it before any
    line of the script's own runs; the chief builds the strategy with the
    partitioner; fit() gets the dataset function under the strategy only, a
    tape loop's steps are scheduled by the coordinator under it only."""
    text = _expected(case).read_text()
    tree = ast.parse(text)
    assert "tf.distribute.Server(" in text and "server.join()" in text
    assert "ParameterServerStrategy(cluster_resolver, variable_partitioner=partitioner)" in text
    assert "MinSizePartitioner(\n        min_shard_bytes=262144, max_shards=cluster_resolver.cluster_spec().num_tasks(\"ps\"))" in text
    assert "return tf.distribute.get_strategy()" in text  # without TF_CONFIG: one machine, as before
    if "fit(" in text:
        assert "DatasetCreator(dataset_fn)" in text and ".repeat()" in text and "steps_per_epoch=steps_per_epoch or" in text
    else:
        assert "if coordinator is None:\n        yield from dataset" in text and "create_per_worker_dataset(dataset.repeat())" in text
        assert "if coordinator is None or not args" in text and "return step(*args)" in text
    # tf-keras selected before TensorFlow is imported
    first_tf = next(n.lineno for n in ast.walk(tree) if isinstance(n, ast.Import) and n.names[0].name == "tensorflow")
    assert text.splitlines()[first_tf - 2].strip() == 'os.environ.setdefault("TF_USE_LEGACY_KERAS", "1")'


def test_the_shard_size_is_an_option():
    source = (CASES[0] / "input.py").read_text()
    result = _convert(source, min_shard_bytes=1 << 20)
    assert "min_shard_bytes=1048576," in result.data.decode()


KERAS3 = '''import numpy as np
import keras
from keras import layers

x = np.random.rand(100, 4)
y = np.random.rand(100, 1)
model = keras.Sequential([layers.Dense(1)])
model.compile(optimizer="adam", loss="mse")
model.fit(x, y, epochs=2)
'''


def test_keras3_is_refused_with_the_upstream_reason_and_the_edit():
    result = _convert(KERAS3)
    assert result.status == "unsupported" and result.data is None
    assert result.error_line == 2
    assert "keras-team/keras#18624" in result.error
    assert "line 2: import keras" in result.error and "line 3: from keras import layers" in result.error
    assert "import tf_keras as keras" in result.error and "TF_USE_LEGACY_KERAS=1" in result.error


def test_keras3_refusal_exits_non_zero_on_the_command_line(tmp_path):
    script = tmp_path / "train.py"
    script.write_text(KERAS3)
    out = tmp_path / "train_dist.py"
    proc = subprocess.run([sys.executable, "-m", "tfdist", "convert", str(script), "--backend", "tf-distribute",
                           "--strategy", PS, "-o", str(out)], capture_output=True, text=True, env=ENV)
    assert proc.returncode == 2, proc.stderr
    assert "train.py:2: ERROR" in proc.stderr and "keras-team/keras#18624" in proc.stderr
    assert not out.exists()


TF_KERAS = '''import numpy as np
import tensorflow as tf

x = np.random.rand(100, 4)
y = np.random.rand(100, 1)
model = tf.keras.Sequential([tf.keras.layers.Dense(1)])
model.compile(optimizer="adam", loss="mse")
{fit}
'''


@pytest.mark.parametrize("fit,line,words", [
    ("model.fit(x, y, epochs=2, validation_split=0.1)", 8, "validation_split"),
    ("model.fit(x, y, 16, 2)", 8, "by keyword"),
    ("model.fit(tf.data.Dataset.from_tensor_slices((x, y)).batch(8).repeat(), epochs=2)", 8, "steps_per_epoch="),
    ("model.fit(iter([(x, y)]), epochs=2)", 8, "DatasetCreator(dataset_fn)"),
    ("model.fit(x, y, epochs=2)\nmodel.evaluate(x, y)", 9, "evaluate()"),
    ("for _ in range(3):\n    model.train_on_batch(x, y)", 9, "train_on_batch"),
])
def test_what_is_not_converted_is_refused_with_its_line(fit, line, words):
    result = _convert(TF_KERAS.format(fit=fit))
    assert result.status == "unsupported", result.status
    assert result.error_line == line and words in result.error, (result.error_line, result.error)


def test_a_dataset_is_repeated_and_its_seeded_shuffle_warned():
    ds = "tf.data.Dataset.from_tensor_slices((x, y)).shuffle(100{seed}).batch(8)"
    fit = "ds = " + ds + "\nmodel.fit(ds, epochs=2{steps})"
    for seed, steps, warned in (("", "", False), (", seed=3", "", True), ("", ".repeat(), steps_per_epoch=5", False)):
        source = TF_KERAS.format(fit=fit.format(seed=seed, steps="") if not steps else
                                 "ds = " + ds.format(seed=seed) + ".repeat()\nmodel.fit(ds, epochs=2, steps_per_epoch=5)")
        result = _convert(source)
        assert result.status == "converted", result.error
        assert "model.fit(**parameter_server_data(ds" in result.data.decode()
        assert "return dict(x=x.repeat(), steps_per_epoch=steps)" in result.data.decode()
        assert bool([w for w in result.warnings if "same order" in w.message]) == warned, result.warnings
    source = TF_KERAS.format(fit="tf.random.set_seed(0)\nds = " + ds.format(seed="") + "\nmodel.fit(ds)")
    warnings = [w for w in _convert(source).warnings if "same order" in w.message]
    assert warnings and "tf.random.set_seed(0)" in warnings[0].message


@pytest.mark.parametrize("shuffle,warned", [("", False), (", shuffle=True", False), (", shuffle=False", True)])
def test_arrays_read_unshuffled_are_warned(shuffle, warned):
    result = _convert(TF_KERAS.format(fit=f"model.fit(x, y, epochs=2{shuffle})"))
    assert result.status == "converted"
    assert bool([w for w in result.warnings if "same order" in w.message and w.line == 8]) == warned


def test_tf_keras_fit_keeps_the_script_as_written_without_tf_config():
    """The keyword arguments fit() gets without the strategy are fit()'s own
    defaults where the script gave none."""
    result = _convert(TF_KERAS.format(fit="model.fit(x, y, epochs=2)"))
    text = result.data.decode()
    assert "model.fit(**parameter_server_data(x, y), epochs=2)" in text
    assert "return dict(x=x, y=y, batch_size=batch_size, shuffle=shuffle, steps_per_epoch=steps_per_epoch)" in text
    assert "def parameter_server_data(x, y=None, batch_size=None, shuffle=True, steps_per_epoch=None):" in text


@pytest.mark.parametrize("options,words", [
    (dict(backend="horovod", strategy=PS), "--backend tf-distribute"),
    (dict(backend="tf-distribute", strategy=PS, fault_tolerant=True), "--fault-tolerant"),
    (dict(backend="tf-distribute", strategy=PS, warmup_epochs=1), "--warmup-epochs"),
    (dict(backend="tf-distribute", strategy=PS, lr_scaling="sqrt"), "--lr-scaling"),
    (dict(backend="tf-distribute", min_shard_bytes=1024), "--ps-min-shard-bytes"),
    (dict(backend="tf-distribute", strategy=PS, min_shard_bytes=0), "--ps-min-shard-bytes"),
    (dict(backend="tf-distribute", strategy="async"), "--strategy"),
])
def test_options_that_do_not_go_together(options, words):
    with pytest.raises(OptionsError, match=words.replace("-", r"\-")):
        Options(**options)


def test_auto_chooses_tf_distribute_for_parameter_servers():
    options, choice = api.resolve_options(Options(strategy=PS), b"import tensorflow as tf\n") \
        if hasattr(api, "resolve_options") else (None, None)
    if options is None:
        from tfdist.assembly import resolve_options
        options, choice = resolve_options(Options(strategy=PS), b"import tensorflow as tf\n")
    assert options.backend == "tf-distribute" and options.engine == PS
    assert "ParameterServerStrategy" in choice.reason
    assert Options.of(PS) == Options(backend="tf-distribute", strategy=PS)
    assert Options(backend="tf-distribute", strategy=PS, min_shard_bytes=4096).describe() == \
        "--backend tf-distribute --strategy parameter-server --ps-min-shard-bytes 4096"


# ---------------------------------------------------------------- tfdist run --strategy parameter-server
def test_the_cluster_is_a_chief_workers_and_parameter_servers_on_free_ports():
    from tfdist.runtime import ps_launcher
    tasks = ps_launcher.cluster_tasks(2, 3)
    assert [t.label for t in tasks] == ["chief:0", "worker:0", "worker:1", "ps:0", "ps:1", "ps:2"]
    assert len({t.port for t in tasks}) == 6
    configs = [json.loads(t.tf_config) for t in tasks]
    cluster = configs[0]["cluster"]
    assert all(c["cluster"] == cluster for c in configs)
    assert [len(cluster[k]) for k in ("chief", "worker", "ps")] == [1, 2, 3]
    assert [c["task"] for c in configs][3] == {"type": "ps", "index": 0}
    assert cluster["worker"][1] == f"localhost:{tasks[2].port}"


@pytest.mark.parametrize("argv,words", [
    (["--strategy", PS, "-np", "2", "-H", "a:1,b:1"], "-H is not for --strategy parameter-server"),
    (["--strategy", PS, "--backend", "horovod", "-np", "2"], "--backend tf-distribute"),
    (["--strategy", PS, "--ps", "1"], "needs -np W"),
    (["--backend", "tf-distribute", "-np", "2", "--ps", "1"], "--ps P goes with --strategy parameter-server"),
])
def test_run_refuses_options_that_do_not_go_together(tmp_path, capsys, argv, words):
    from tfdist.runtime import commands
    script = tmp_path / "train_ps.py"
    script.write_text(_expected(CASES[0]).read_text())
    if "--ps" in argv and "--strategy" not in argv:
        script.write_text("import tensorflow as tf\nstrategy = tf.distribute.MirroredStrategy()\n")
    assert commands.run_main([*argv, str(script)]) == 3
    assert words in capsys.readouterr().err


def test_run_refuses_a_script_that_builds_no_parameter_server_strategy(tmp_path, capsys):
    from tfdist.runtime import commands
    script = tmp_path / "train.py"
    script.write_text("import tensorflow as tf\nstrategy = tf.distribute.MirroredStrategy()\n")
    assert commands.run_main(["--strategy", PS, "-np", "2", str(script)]) == 3
    assert "builds no ParameterServerStrategy" in capsys.readouterr().err


@pytest.mark.parametrize("example,words", [
    ("tape_raw_variables.py", "--strategy mirrored"),  # its step is written in the loop
    ("tf1_session.py", "--backend horovod"),
    ("tf1_monitored_session.py", "--backend horovod"),
])
def test_inline_tape_steps_and_tf1_are_refused_naming_what_converts_them(example, words):
    path = Path(__file__).resolve().parents[2] / "examples" / example
    result = convert_source(path.read_bytes(), str(path), backend=PS)
    assert result.status == "unsupported" and result.error_line and words in result.error, result.error


@pytest.mark.parametrize("argv,words", [
    (["job", "slurm", "--nodes", "1", "--tasks-per-node", "4"], "say how many parameter servers with --ps P (of the job's tasks"),
    (["job", "kubernetes", "--workers", "2", "--image", "x", "--api", "v1"], "say how many parameter servers"),
    (["job", "kubernetes", "--workers", "2", "--image", "x", "--ps", "1"], "Kubeflow Trainer v2 runs a TrainJob"),
    (["job", "slurm", "--nodes", "1", "--tasks-per-node", "3", "--ps", "2"], "must hold a chief, at least one worker"),
])
def test_job_refuses_what_cannot_make_a_parameter_server_job(tmp_path, argv, words):
    """A parameter-server script needs --ps, room for a chief and a worker
    beside the parameter servers (Slurm), and on Kubernetes a TFJob (--api
    v1: Trainer v2 has no runtime of chief, workers and parameter servers):
    refused, nothing written."""
    script = tmp_path / "train_ps.py"
    script.write_text(_expected(CASES[0]).read_text())
    proc = subprocess.run([sys.executable, "-m", "tfdist", *argv, str(script)], capture_output=True, text=True,
                          cwd=tmp_path, timeout=120, env=ENV)
    assert proc.returncode == 3, proc.stderr
    assert words in proc.stderr, proc.stderr
    assert list(tmp_path.iterdir()) == [script]


def test_ps_is_refused_for_a_script_without_parameter_servers(tmp_path):
    script = tmp_path / "train.py"
    script.write_text("import tensorflow as tf\nstrategy = tf.distribute.MultiWorkerMirroredStrategy()\n")
    proc = subprocess.run([sys.executable, "-m", "tfdist", "job", "slurm", "--tasks-per-node", "4", "--ps", "1",
                           str(script)], capture_output=True, text=True, cwd=tmp_path, timeout=120, env=ENV)
    assert proc.returncode == 3 and "builds no ParameterServerStrategy" in proc.stderr, proc.stderr


def test_each_slurm_task_of_a_parameter_server_job_knows_its_place(tmp_path):
    """The task code the batch script carries (standard library only), run as
    the 4 tasks of a 2-node job with 2 tasks each and --ps 1: task 0 the chief
    (it runs the script and leaves the done file), tasks 1-2 workers, task 3
    the parameter server (each runs the script as its server, here one that
    prints its TF_CONFIG and ends); the sbatch script wires it with srun."""
    from tfdist.runtime import slurm, slurm_tasks
    script = tmp_path / "train_ps.py"
    script.write_text("import os\nprint(os.environ['TF_CONFIG'])\n")
    done = tmp_path / "done"
    seen = []
    for rank in range(4):
        env = {**ENV, "TFDIST_NODES": "n1,n2", "TFDIST_TASKS_PER_NODE": "2", "SLURM_PROCID": str(rank),
               "SLURM_LOCALID": str(rank % 2), "TFDIST_SLURM_PORT": "23000", "TFDIST_PARAMETER_SERVERS": "1",
               "TFDIST_CHIEF_DONE": str(done), "SLURM_JOB_ID": "7"}
        proc = subprocess.run([sys.executable, "-c", slurm_tasks.PARAMETER_SERVER_TASK, str(script)], env=env,
                              capture_output=True, text=True, timeout=60)
        assert proc.returncode == 0, proc.stderr
        seen.append(json.loads(proc.stdout))
        assert done.exists() == (rank == 0)  # the chief left it (the others ended by themselves here)
        done.unlink(missing_ok=True)
    cluster = {"chief": ["n1:23000"], "worker": ["n1:23001", "n2:23000"], "ps": ["n2:23001"]}
    assert [c["cluster"] for c in seen] == [cluster] * 4
    assert [c["task"] for c in seen] == [{"type": "chief", "index": 0}, {"type": "worker", "index": 0},
                                         {"type": "worker", "index": 1}, {"type": "ps", "index": 0}]
    # a server that serves forever is stopped once the chief has ended, and the task ends well
    script.write_text("import time\nprint('serving', flush=True)\ntime.sleep(600)\n")
    env["SLURM_PROCID"], env["SLURM_LOCALID"] = "3", "1"
    server = subprocess.Popen([sys.executable, "-c", slurm_tasks.PARAMETER_SERVER_TASK, str(script)], env=env,
                              stdout=subprocess.PIPE, text=True)
    assert server.stdout.readline() == "serving\n"
    done.write_text("")
    assert server.wait(timeout=60) == 0
    spec = slurm.JobSpec(script=str(script), backend="tf-distribute", nodes=2, tasks_per_node=2, parameter_servers=1)
    text = slurm.sbatch_script(spec)
    assert "export TFDIST_PARAMETER_SERVERS=1" in text and "srun --kill-on-bad-exit=1 --distribution=block --label " \
        "--ntasks=4" in text and "(a chief, 2 worker(s), 1 parameter server(s))" in text


@pytest.mark.parametrize("argv,words", [
    (["--converted", "--strategy", "mirrored"], "verify it with --strategy parameter-server -np W --ps P"),
    (["--ps", "2"], "--ps P goes with --strategy parameter-server"),
    (["--strategy", PS, "--backend", "horovod"], "--backend tf-distribute"),
    (["--strategy", PS, "--steps", "5"], "--steps is not for --strategy parameter-server"),
    (["--strategy", PS, "--sweep"], "--sweep is not for --strategy parameter-server"),
    (["--strategy", PS, "--local-devices", "2"], "--local-devices is not for --strategy parameter-server"),
    (["--strategy", PS, "--lr-scaling", "sqrt"], "--lr-scaling is not for --strategy parameter-server"),
])
def test_verify_refuses_options_that_do_not_go_with_parameter_servers(tmp_path, capsys, argv, words):
    from tfdist.runtime.verify_command import verify_main
    script = tmp_path / "train_ps.py"
    script.write_text(_expected(CASES[0]).read_text())
    assert verify_main([*argv, "-np", "2", str(script)]) == 3
    assert words in capsys.readouterr().err
    assert list(tmp_path.iterdir()) == [script]


def test_verify_parses_parameter_servers_and_takes_them_for_a_converted_script(tmp_path):
    from tfdist.runtime.verify_command import _verify_problem, parse_verify_args
    script = tmp_path / "train_ps.py"
    script.write_text(_expected(CASES[0]).read_text())
    args = parse_verify_args(["-np", "3", str(script), "--converted", "--compare"])
    assert _verify_problem(args, []) is None
    assert (args.strategy, args.ps, args.backend, args.np) == (PS, 1, "tf-distribute", 3)
    args = parse_verify_args(["--strategy", PS, "--ps", "2", "-np", "2", str(script), "--", "--epochs", "1"])
    assert _verify_problem(args, []) is None and (args.ps, args.args) == (2, ["--epochs", "1"])


def test_verify_refuses_a_given_script_that_builds_no_parameter_server_strategy(tmp_path, capsys):
    from tfdist.runtime.verify_command import verify_main
    script = tmp_path / "train.py"
    script.write_text("import tensorflow as tf\nstrategy = tf.distribute.MirroredStrategy()\n")
    assert verify_main(["--strategy", PS, "--converted", "-np", "2", str(script)]) == 3
    assert "builds no ParameterServerStrategy" in capsys.readouterr().err


def _task(rank, **raw):
    from tfdist.runtime.verify_records import RankRecord
    record = {"rank": rank, "exit_code": 0, "exit_how": "returned", "optimizer": {"steps": 0}, "files": []}
    record.update(raw)
    return RankRecord.from_json(record)


def _cluster(chief_steps=32, worker_code=None, worker_files=(), worker_serves=True):
    """The checks of a synthetic run: a chief, 2 workers, 1 parameter server."""
    from tfdist.runtime import launcher, verify_ps
    from tfdist.runtime.verify_records import Observation
    original = _task(0, optimizer={"steps": 32})
    chief = _task(0, optimizer={"steps": chief_steps}, strategies=[{"class": "ParameterServerStrategyV2"}],
                  files=[{"path": "/run/weights.h5", "kind": "model"}])
    served = {"exit_code": None, "exit_how": "serving"}
    tasks = [chief, _task(1, files=[{"path": p, "kind": "checkpoint"} for p in worker_files],
                          **(served if worker_serves else {})),
             _task(2, **served), _task(3, **served)]
    labels = ["chief:0", "worker:0", "worker:1", "ps:0"]
    result = launcher.LaunchResult(returncode=worker_code or 0, timed_out=False, duration_s=1.0, command=[],
                                   worker_returncodes=[0, worker_code, None, None],
                                   failed_worker=1 if worker_code else None)
    observe = lambda ranks: Observation("run", len(ranks), "/run", ranks, 0, False, 1.0, [])  # noqa: E731
    checks, _ = verify_ps.cluster_checks(observe([original]), observe(tasks), labels, result, None)
    return {c.name: c for c in checks}


def test_parameter_server_checks_pass_when_the_tasks_are_stopped_after_the_chief():
    checks = _cluster()
    assert all(c.passed for c in checks.values()), [c.detail for c in checks.values() if not c.passed]
    assert set(checks) == {"original-exit", "exit-codes", "parameter-server-cluster", "steps-scheduled",
                           "chief-writes"}
    assert checks["steps-scheduled"].measured == {"original": 32, "cluster": 32}


@pytest.mark.parametrize("change,name,words", [
    (dict(chief_steps=16), "steps-scheduled", "took 16 optimizer steps"),
    (dict(worker_code=1), "exit-codes", "worker:0 exited 1 before the chief ended"),
    (dict(worker_files=["/run/ckpt-1.index"]), "chief-writes", "worker:0 wrote ckpt-1.index"),
    (dict(worker_serves=False), "parameter-server-cluster", "worker:0 did not serve the cluster"),
])
def test_parameter_server_checks_fail(change, name, words):
    check = _cluster(**change)[name]
    assert not check.passed and words in check.detail, check.detail


def test_every_fixture_converts_or_is_refused_never_an_internal_error():
    """Every whole-script fixture's input under --strategy parameter-server:
    converted (and then converting again changes nothing) or refused with a
    reason, never an internal error (four did: a loop variable rebinding the
    model's statements, fixed)."""
    statuses = {}
    for path in glob("*/*/input.py"):
        result = convert_source(path.read_bytes(), str(path), backend=PS)
        assert result.status != "error", (path, result.error)
        statuses[result.status] = statuses.get(result.status, 0) + 1
        if result.status == "converted":
            compile(result.data, str(path), "exec")
            again = convert_source(result.data, str(path), backend=PS)
            assert again.status == "already-distributed" and again.data == result.data, path
    assert statuses.get("converted", 0) >= 50 and statuses.get("unsupported", 0) >= 200, statuses


def test_a_parameter_server_tfjob_has_a_chief_workers_and_parameter_servers(tmp_path):
    """tfdist job kubernetes --api v1 --ps P: a TFJob with Chief (1), Worker
    (--workers) and PS (P) replicas, every pod the same image and command (the
    Training Operator writes each TF_CONFIG), the serving pods deleted when the
    chief has succeeded (cleanPodPolicy Running); valid for the Training
    Operator's SDK model."""
    import yaml
    from kube_models import validate
    script = tmp_path / "train_ps.py"
    script.write_text(_expected(CASES[0]).read_text())
    proc = subprocess.run([sys.executable, "-m", "tfdist", "job", "kubernetes", "--workers", "3", "--ps", "2",
                           "--image", "my/image:tag", "--api", "v1", "-o", "m.yaml", str(script)],
                          capture_output=True, text=True, cwd=tmp_path, timeout=120, env=ENV)
    assert proc.returncode == 0, proc.stderr
    (job,) = [d for d in yaml.safe_load_all((tmp_path / "m.yaml").read_text()) if d]
    validate(job)
    specs = job["spec"]["tfReplicaSpecs"]
    assert {k: v["replicas"] for k, v in specs.items()} == {"Chief": 1, "Worker": 3, "PS": 2}
    assert job["spec"]["runPolicy"]["cleanPodPolicy"] == "Running"
    commands = {k: v["template"]["spec"]["containers"][0]["command"] for k, v in specs.items()}
    assert set(map(tuple, commands.values())) == {("python", "/workspace/train_ps.py")}
