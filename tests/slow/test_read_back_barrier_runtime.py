"""A file the chief alone writes and every process then reads back (np.save
of a large array, np.load right after, at module level): tfdist puts a
barrier before the read. Run on 2 processes under each engine, every
process reads the whole file. Without the barrier the other rank reads
before the file exists (measured: rank 1 exits 1, FileNotFoundError).
TF1 (graph mode, Horovod): the barrier runs in a session of its own graph;
without it rank 1 reads a partly written CSV (measured: IndexError, exit 1)."""
from __future__ import annotations

import os
import subprocess
from pathlib import Path

import pytest

from conftest import cli_env, missing_stack, run_tfdist
from tfdist.api import convert_file

pytestmark = pytest.mark.slow

SCRIPT = Path(__file__).parent / "runtime_scripts" / "keras_write_then_read_back.py"
TF1_SCRIPT = Path(__file__).parent / "runtime_scripts" / "tf1_write_then_read_back.py"


@pytest.mark.timeout(400)
def test_horovod(runtime_python, tmp_path):
    res = run_tfdist(runtime_python, ["verify", "--timeout", "240", str(SCRIPT)], tmp_path, timeout=300)
    assert res.returncode == 0 and "PASS" in res.stdout, res.stdout[-3000:]


@pytest.mark.timeout(400)
def test_horovod_tf1_graph_mode(runtime_python, tmp_path):
    res = run_tfdist(runtime_python, ["verify", "--timeout", "240", str(TF1_SCRIPT)], tmp_path, timeout=300)
    assert res.returncode == 0 and "PASS" in res.stdout, res.stdout[-3000:]
    converted = convert_file(TF1_SCRIPT, backend="horovod")
    assert "tfdist_barrier" in converted.code and not [w for w in converted.warnings if w.level == "WARNING"]


@pytest.mark.timeout(400)
def test_tf_distribute(tmp_path):
    venv = os.environ.get("TFDIST_TF_DISTRIBUTE_VENV")
    if not venv:
        missing_stack("TFDIST_TF_DISTRIBUTE_VENV is not set: `bash scripts/test.sh` builds and exports it")
    proc = subprocess.run([str(Path(venv) / "bin" / "tfdist"), "verify", "--backend", "tf-distribute",
                           "--timeout", "300", str(SCRIPT)], cwd=tmp_path, env=cli_env(), capture_output=True,
                          text=True, timeout=380)
    assert proc.returncode == 0 and "PASS" in proc.stdout, (proc.stdout[-3000:], proc.stderr[-2000:])
