"""The probe observes a script from outside without changing what it computes."""
from __future__ import annotations

import json
import os
import subprocess
import sys
import time

import pytest

from conftest import SCRIPTS, cli_env, require_module

pytestmark = pytest.mark.slow


def probe(python, script, args, cwd, probe_dir, extra_env=None, timeout=240):
    env = cli_env({"TFDIST_PROBE_DIR": str(probe_dir), **(extra_env or {})})
    start = time.monotonic()
    proc = subprocess.run([python, "-m", "tfdist.runtime.probe", *script, *args], cwd=cwd, env=env,
                          capture_output=True, text=True, timeout=timeout)
    return proc, time.monotonic() - start


def record(probe_dir, rank=0):
    return json.loads((probe_dir / f"rank-{rank}.json").read_text())


def digest_npz(path):
    import numpy as np

    from tfdist.runtime.probe import digest_arrays

    with np.load(path) as data:
        return digest_arrays([data[f"arr_{i}"] for i in range(len(data.files))])[0]


@pytest.mark.timeout(120)
def test_tf1_session_and_monitored_training_session(runtime_python, tmp_path):
    require_module("numpy")
    proc, _ = probe(runtime_python, [str(SCRIPTS / "tf1_graph.py")], ["final.npz"], tmp_path, tmp_path / "p")
    assert proc.returncode == 0, proc.stderr[-3000:]
    rec = record(tmp_path / "p")
    assert rec["exit_code"] == 0 and rec["probe_errors"] == []
    opt = rec["optimizer"]
    # 7 Session.run(train_op) + 5 MonitoredSession runs of tf.group(minimize); the
    # extra evaluation run and hook runs are not steps.
    assert opt["tf1_train_runs"] == 12
    assert opt["steps"] == 12 and opt["source"] == "tf1-session-runs"
    assert opt["global_step"] == 7            # the larger of the two graphs' global steps
    variables = rec["variables"]
    assert variables["tf1_graphs"] == 2
    assert variables["trainable_count"] == 4  # w, b in each graph (global_step is not trainable)
    # The values read just before each session closed are the script's final values.
    assert variables["trainable_sha256"] == digest_npz(tmp_path / "final.npz")
    files = {os.path.relpath(f["path"], tmp_path): f["kind"] for f in rec["files"]}
    assert files["mts_ckpt/model.ckpt-5"] == "checkpoint"
    assert files["mts_ckpt"] == "summary"
    assert files["final.npz"] == "file"


@pytest.mark.timeout(180)
def test_keras_results_unchanged_and_observed(runtime_python, tmp_path):
    plain, probed = tmp_path / "plain", tmp_path / "probed"
    plain.mkdir()
    probed.mkdir()
    script = str(SCRIPTS / "keras_dump.py")
    start = time.monotonic()
    ref = subprocess.run([runtime_python, script, "final.npz"], cwd=plain, env=cli_env(),
                         capture_output=True, text=True, timeout=240)
    plain_s = time.monotonic() - start
    assert ref.returncode == 0, ref.stderr[-3000:]
    proc, probed_s = probe(runtime_python, [script], ["final.npz"], probed, tmp_path / "p")
    assert proc.returncode == 0, proc.stderr[-3000:]
    print(f"plain {plain_s:.1f}s, under the probe {probed_s:.1f}s")
    # Same bits with and without the probe (the script seeds everything).
    assert digest_npz(plain / "final.npz") == digest_npz(probed / "final.npz")
    rec = record(tmp_path / "p")
    assert rec["probe_errors"] == []
    assert rec["variables"]["trainable_count"] == 4
    assert rec["variables"]["trainable_sha256"] == digest_npz(probed / "final.npz")
    assert rec["optimizer"]["steps"] == 12    # 64 samples / batch 16 x 3 epochs
    assert [o["iterations"] for o in rec["optimizer"]["keras"]] == [12]
    files = {os.path.relpath(f["path"], probed): f["kind"] for f in rec["files"]}
    assert files == {"ckpt/w.1.h5": "model", "ckpt/w.2.h5": "model", "ckpt/w.3.h5": "model",
                     "train_log.csv": "file", "final.npz": "file"}


@pytest.mark.timeout(60)
@pytest.mark.parametrize("mode, code, exception", [
    ("ok", 0, None),
    ("raise", 1, "ValueError: boom from the script"),
    ("exit3", 3, None),
])
def test_exit_status_and_script_view(mode, code, exception, tmp_path):
    # No TensorFlow needed: any python with tfdist importable.
    (tmp_path / "run").mkdir()
    proc, _ = probe(sys.executable, [str(SCRIPTS / "exits.py")], [mode], tmp_path / "run", tmp_path / "p")
    assert proc.returncode == code, proc.stderr
    rec = record(tmp_path / "p")
    assert rec["exit_code"] == code
    assert rec["exception"] == exception
    assert rec["rank"] == 0 and rec["size"] == 1
    if mode == "raise":
        assert "ValueError: boom from the script" in proc.stderr
        # the traceback shows the script, not the probe (a package: tfdist/runtime/probe/*.py)
        assert os.path.join("tfdist", "runtime", "probe") not in proc.stderr
    seen = json.loads((tmp_path / "run" / "started.json").read_text())
    assert seen["file"] == str(SCRIPTS / "exits.py")
    assert seen["argv"] == [str(SCRIPTS / "exits.py"), mode]
    assert seen["path0"] == str(SCRIPTS)
    assert seen["name"] == "__main__" and seen["main_is_me"] is True
    files = [os.path.relpath(f["path"], tmp_path / "run") for f in rec["files"]]
    assert files == ["started.json"]          # the mkstemp file outside the cwd is ignored


@pytest.mark.timeout(60)
def test_as_file_presents_the_original_path(tmp_path):
    copy = tmp_path / "elsewhere" / "exits.py"
    copy.parent.mkdir()
    copy.write_text((SCRIPTS / "exits.py").read_text())
    (tmp_path / "run").mkdir()
    proc, _ = probe(sys.executable, ["--as-file", str(SCRIPTS / "exits.py"), str(copy)], ["ok"],
                    tmp_path / "run", tmp_path / "p")
    assert proc.returncode == 0, proc.stderr
    seen = json.loads((tmp_path / "run" / "started.json").read_text())
    assert seen["file"] == str(SCRIPTS / "exits.py")
    assert seen["path0"] == str(SCRIPTS)
    assert record(tmp_path / "p")["script"] == str(SCRIPTS / "exits.py")


@pytest.mark.timeout(60)
@pytest.mark.parametrize("writes", [False, True])
def test_a_file_opened_read_write_counts_as_written_only_if_it_changed(writes, tmp_path):
    """tf-keras' load_model opens a .keras archive "r+b" and only reads it: a
    worker loading the chief's model is not a second writer; a worker that
    does change a file in place is one."""
    run = tmp_path / "run"
    run.mkdir()
    (run / "model.keras").write_bytes(b"archive")
    script = tmp_path / "opens.py"
    body = "f.seek(0, os.SEEK_END); f.write(b'more')" if writes else "f.read()"
    script.write_text("import os\n"
                      "with open('model.keras', 'r+b') as f:\n"
                      f"    {body}\n"
                      "fd = os.open('model.keras', os.O_RDWR)\n"
                      "os.close(fd)\n")
    proc, _ = probe(sys.executable, [str(script)], [], run, tmp_path / "p")
    assert proc.returncode == 0, proc.stderr
    files = [os.path.relpath(f["path"], run) for f in record(tmp_path / "p")["files"]]
    assert files == (["model.keras"] if writes else [])


_DRAWS = '''
import json, random, sys
import numpy as np
import tensorflow as tf
print(json.dumps([random.random(), float(np.random.rand()), float(tf.random.uniform(()))]))
'''


def test_compare_seed_gives_the_original_and_rank_0_the_same_draws(runtime_python, tmp_path):
    """verify --compare seeds each run with TFDIST_PROBE_SEED + its rank:
    the original (rank 0 of 1) draws what rank 0 draws, another rank does not,
    and without the variable nothing is seeded."""
    script = tmp_path / "draws.py"
    script.write_text(_DRAWS)

    def draws(extra_env):
        proc, _ = probe(runtime_python, [str(script)], [], tmp_path, tmp_path / "p", extra_env)
        assert proc.returncode == 0, proc.stderr[-3000:]
        return json.loads(proc.stdout.strip().splitlines()[-1])

    original = draws({"TFDIST_PROBE_SEED": "7"})
    assert draws({"TFDIST_PROBE_SEED": "7", "HOROVOD_RANK": "0", "HOROVOD_SIZE": "2"}) == original
    other_rank = draws({"TFDIST_PROBE_SEED": "7", "HOROVOD_RANK": "1", "HOROVOD_SIZE": "2"})
    assert all(a != b for a, b in zip(other_rank, original))
    assert draws({}) != draws({})
