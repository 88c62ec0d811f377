"""A helper module's write (tests/slow/helper_writes: pictures.save_samples appends a line per
writing process to samples_<epoch>.txt) called from the training loop: converted, the call runs
on rank 0 only -- run on 2 Horovod ranks and 2 TF_CONFIG workers, every file holds one line. Can
it fail? The previous conversion left the call to every rank: two lines per file (run by hand)."""
from __future__ import annotations

import shutil
from pathlib import Path

import pytest

from conftest import run_tfdist, tf_distribute_python
from tfdist.api import convert_file

pytestmark = pytest.mark.slow

PROJECT = Path(__file__).resolve().parent / "helper_writes"


@pytest.mark.timeout(900)
@pytest.mark.parametrize("engine", ["horovod", "tf-distribute"])
def test_a_helper_module_write_is_made_by_one_process(engine, tmp_path, runtime_python):
    python = tf_distribute_python() if engine == "tf-distribute" else runtime_python
    shutil.copy(PROJECT / "pictures.py", tmp_path / "pictures.py")
    converted = convert_file(PROJECT / "train.py", backend=engine)
    assert converted.status == "converted", converted.error
    (tmp_path / "train.py").write_bytes(converted.data)
    res = run_tfdist(python, ["run", "--backend", engine, "-np", "2", "--timeout", "300", "train.py"], tmp_path,
                     timeout=700)
    assert res.returncode == 0, res.stdout[-3000:] + res.stderr[-3000:]
    for epoch in range(2):
        lines = (tmp_path / f"samples_{epoch}.txt").read_text().splitlines()
        assert len(lines) == 1, (epoch, lines)
