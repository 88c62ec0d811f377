"""A model saved and read back under MultiWorkerMirroredStrategy (rule
worker-reads, stop 43): every worker saves (the chief to the user's path,
the others to a temporary directory) and each reads back its own copy. Run
as 2 TF_CONFIG workers, each in a working directory of its own (two hosts
without a shared file system): both exit 0 and evaluate the same restored
model (the print of the evaluation: the chief's alone); the chief alone leaves the file. Can the check fail? The read left
at the user's path (the conversion before this rule) makes the second
worker fail: no file there."""
from __future__ import annotations

import json
import os
import socket
import subprocess
from pathlib import Path

import pytest

from tfdist.api import convert_file
from test_gradient_clipping_runtime import _venv

pytestmark = pytest.mark.slow

EXAMPLE = Path(__file__).resolve().parents[2] / "src/tfdist/rules/examples/keras/read_back_saved_model/input.py"
READ = "keras.models.load_model(worker_path(path, reading=True))"


def _two_workers(script: Path, tmp_path: Path):
    """[(return code, output, files left)] of 2 TF_CONFIG workers, each in its own directory."""
    ports = []
    for _ in range(2):
        with socket.socket() as s:
            s.bind(("localhost", 0))
            ports.append(s.getsockname()[1])
    cluster = {"worker": [f"localhost:{p}" for p in ports]}
    runs = []
    for i in range(2):
        home = tmp_path / f"host{i}"
        home.mkdir(parents=True)
        env = dict(os.environ, TF_CONFIG=json.dumps({"cluster": cluster, "task": {"type": "worker", "index": i}}),
                   TF_CPP_MIN_LOG_LEVEL="2")
        runs.append((home, subprocess.Popen([str(_venv() / "bin" / "python"), str(script)], cwd=home, env=env,
                                            stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True)))
    out = []
    for home, proc in runs:
        try:
            text = proc.communicate(timeout=400)[0]
        finally:
            proc.kill()
        out.append((proc.returncode, text, sorted(p.name for p in home.iterdir())))
    return out


@pytest.mark.timeout(900)
def test_each_worker_reads_back_the_model_it_saved(tmp_path):
    result = convert_file(str(EXAMPLE), backend="tf-distribute")
    assert result.status == "converted", result.error
    converted = result.data.decode()
    assert converted.count(READ) == 1, converted
    # the evaluation runs on every worker (a collective), its print on the chief only; the test prints
    # what each worker's restored model evaluates to as well, to compare them
    assert "evaluate_result = restored.evaluate(" in converted, converted
    script = tmp_path / "converted.py"
    script.write_text(converted + "print('EVALUATED', evaluate_result)\n")
    (chief_rc, chief_out, chief_files), (other_rc, other_out, other_files) = _two_workers(script, tmp_path / "run")
    assert (chief_rc, other_rc) == (0, 0), chief_out[-2000:] + other_out[-2000:]
    assert chief_files == ["classifier.keras"] and other_files == []
    evaluations = [next(l for l in out.splitlines() if l.startswith("EVALUATED")) for out in (chief_out, other_out)]
    assert evaluations[0] == evaluations[1], evaluations
    printed = [[l for l in out.splitlines() if l.startswith("[")] for out in (chief_out, other_out)]
    assert len(printed[0]) == 1 and printed[1] == [], printed  # the script's own print: the chief's alone
    # the read left at the user's path: the second "host" has no such file
    mutant = tmp_path / "mutant.py"
    mutant.write_text(converted.replace(READ, "keras.models.load_model(path)"))
    (mutant_rc, _, _), (other_rc, other_out, _) = _two_workers(mutant, tmp_path / "mutant_run")
    assert other_rc != 0 and "No file or directory found" in other_out, other_out[-2000:]
