"""A tape loop over batches a module tfdist cannot read hands out
(actions/stream_feeds.py): converted for tf.distribute, every worker reads
the stream and each group of N consecutive batches makes one step. Run by
`tfdist verify` as a user runs it, the library on PYTHONPATH only:

- the library orders its batches with NumPy's global generator, unseeded:
  the converted script draws the stream's order from a state every worker
  shares, so 2 workers PASS with disjoint shares covering the data;
- the library shuffles a tf.data pipeline without a seed: 2 workers cannot
  read the same stream, and the converted script stops on both, saying why,
  instead of training on overlapping shares (verify FAILs on the exits); on
  1 process x 2 devices (one stream) the same conversion PASSes.

- a counted step loop draws each batch by a call into the library
  (``batch_x, batch_y = corpus.next_batch(10)``, a cursor reshuffled with
  NumPy at each wrap, the corpus built before the loop): each step draws once
  per replica, the steps are halved, and 2 workers PASS with disjoint shares.

Before, tf.distribute refused these files ("does not read a tf.data dataset").

Horovod shares such a stream out too (rank r keeps element r of each round):
a library ordering with TensorFlow's unseeded generator makes each rank's
stream its own, and the converted script stops on both ranks at the end of
the first round, saying why (it trained on overlapping shares before)."""
from __future__ import annotations

import json
import subprocess
from pathlib import Path

import pytest

from conftest import cli_env, tf_distribute_python

pytestmark = pytest.mark.slow

HERE = Path(__file__).parent / "stream_feeds"
SCRIPT = HERE / "train_from_library.py"
STOP = "tfdist: the workers read different batches in the training loop at line 18 of the original script"


def _verify(library: str, tmp_path: Path, *args: str, source: Path = SCRIPT, python: str = "") -> tuple:
    tmp_path.mkdir(parents=True, exist_ok=True)
    script = tmp_path / source.name
    script.write_bytes(source.read_bytes())  # alone in its folder: tfdist does not see the library
    env = cli_env({"PYTHONPATH": ":".join([cli_env()["PYTHONPATH"], str(HERE / library)])})
    backend = "horovod" if python else "tf-distribute"
    proc = subprocess.run([python or tf_distribute_python(), "-m", "tfdist.runtime.commands", "verify", "--backend",
                           backend, "--json", "--timeout", "240", *args, str(script)],
                          cwd=tmp_path, env=env, capture_output=True, text=True, timeout=400)
    assert proc.returncode in (0, 1), proc.stderr[-3000:]
    return json.loads(proc.stdout), proc.stderr


@pytest.mark.timeout(420)
def test_a_library_ordering_with_numpy_trains_on_disjoint_shares_on_2_workers(tmp_path):
    report, _ = _verify("numpy_order", tmp_path, "-np", "2", "--compare")
    assert report["result"] == "PASS", report["reasons"]
    assert report["reference"]["ranks"][0]["optimizer_steps"] == 288  # 960 / 10 x 3 epochs
    assert [r["optimizer_steps"] for r in report["distributed"]["ranks"]] == [144, 144]
    assert report["samples"]["first_epoch_overlap"] == 0 and report["samples"]["coverage"] == 1.0


@pytest.mark.timeout(420)
def test_an_unseeded_tf_data_shuffle_stops_2_workers_and_trains_on_one_process(tmp_path):
    report, stderr = _verify("tf_data_unseeded", tmp_path / "workers", "-np", "2")
    assert report["result"] == "FAIL"
    assert any("exited 1" in r for r in report["reasons"]), report["reasons"]
    assert STOP in stderr + json.dumps(report), (report["reasons"], stderr[-3000:])
    report, _ = _verify("tf_data_unseeded", tmp_path / "devices", "-np", "1", "--local-devices", "2", "--compare")
    assert report["result"] == "PASS", report["reasons"]
    assert [r["optimizer_steps"] for r in report["distributed"]["ranks"]] == [144]


@pytest.mark.timeout(420)
def test_a_batch_drawn_by_a_library_call_each_step_is_drawn_once_per_replica(tmp_path):
    report, _ = _verify("cursor", tmp_path, "-np", "2", "--compare", source=HERE / "train_draws.py")
    assert report["result"] == "PASS", report["reasons"]
    assert report["reference"]["ranks"][0]["optimizer_steps"] == 300
    assert [r["optimizer_steps"] for r in report["distributed"]["ranks"]] == [150, 150]
    assert report["samples"]["first_epoch_overlap"] == 0 and report["samples"]["coverage"] == 1.0


@pytest.mark.timeout(420)
def test_horovod_stops_when_the_ranks_read_different_streams(runtime_python, tmp_path):
    report, stderr = _verify("tf_random_order", tmp_path, "-np", "2", python=runtime_python)
    assert report["result"] == "FAIL"
    assert "tfdist: the ranks read different elements from a stream they share out" in json.dumps(report) + stderr, \
        report["reasons"]
