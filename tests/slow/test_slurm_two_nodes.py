"""Past one machine, for real (issue 40): both engines train across two Slurm
nodes, every rank a Slurm task, from an environment without tfdist.

The cluster (tests/slow/support/two_node_slurm.py): two network namespaces
joined by a veth pair are nodes ``n1`` and ``n2`` (their own addresses, host
names and /etc/hosts), slurmctld and one slurmd per node. A converted
script of each engine is submitted with ``tfdist job slurm --nodes 2
--tasks-per-node 2 --submit --wait``: srun starts the 4 processes (2 per
node), the tf.distribute workers meet over TCP between the nodes, the
Horovod ranks through the Gloo rendezvous the batch script starts on n1 (no
horovodrun, no ssh). The job's interpreter cannot import tfdist or LibCST
(tests/slow/support/blocked_python.py), except with --record, whose probe is
tfdist's. Checked: the job completed; the ranks ran 2 on each node;
every rank ends with the same weights after 1/4 of the original's steps;
with --record (verify's probe in every task): the same trainable variables
on every rank, 4 workers in the strategy, and the weights file written by
rank 0 only.
"""
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
from two_node_slurm import TwoNodeSlurm, why_unavailable  # noqa: E402
from conftest import missing_stack  # noqa: E402
from test_slurm_jobs import blocked_python  # noqa: E402

pytestmark = pytest.mark.slow

SRC = Path(__file__).resolve().parents[2] / "src"
SCRIPTS = Path(__file__).resolve().parent / "slurm_scripts"
TF_DISTRIBUTE_VENV = os.environ.get("TFDIST_TF_DISTRIBUTE_VENV")
ORIGINAL_STEPS = 8          # keras_fit.py on one process
NODES, PER_NODE = 2, 2
RANKS = NODES * PER_NODE
#: every rank's host, weights and steps after the converted script (the test's addition)
SHOW = ('\nimport hashlib, socket\nprint("RANKSTATE", socket.gethostname(), hashlib.sha256(b"".join('
        'w.tobytes() for w in model.get_weights())).hexdigest(), int(model.optimizer.iterations.numpy()), '
        'flush=True)\n')


@pytest.fixture(scope="module")
def cluster(tmp_path_factory):
    reason = why_unavailable()
    if reason:
        missing_stack(reason)
    started = time.monotonic()
    c = TwoNodeSlurm.start(tmp_path_factory.mktemp("two-node-slurm"))
    print(f"two-node Slurm up in {time.monotonic() - started:.1f}s")
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


@pytest.mark.timeout(400)
@pytest.mark.parametrize("backend,record", [("tf-distribute", False), ("horovod", False), ("tf-distribute", True),
                                            ("horovod", True)],
                         ids=["tf-distribute", "horovod", "tf-distribute-recorded", "horovod-recorded"])
def test_both_engines_train_across_two_nodes(cluster, runtime_python, tmp_path, backend, record):
    python = _python(backend, runtime_python)
    # the job's interpreter: TensorFlow's (and Horovod's), where tfdist and LibCST cannot be imported;
    # --record runs verify's probe, tfdist's own, in every task
    job_python = python if record else str(blocked_python(python, tmp_path))
    script = tmp_path / "keras_fit_dist.py"
    assert tfdist_main(["convert", str(SCRIPTS / "keras_fit.py"), "--backend", backend, "-o", str(script), "-q"]) == 0
    script.write_text(script.read_text() + SHOW)
    records = tmp_path / "records"
    env = dict(cluster.env, PYTHONPATH=str(SRC), TF_CPP_MIN_LOG_LEVEL="2")
    env.pop("TF_CONFIG", None)
    started = time.monotonic()
    proc = subprocess.run(cluster.command([
        python, "-m", "tfdist", "job", "slurm", str(script), "--nodes", str(NODES), "--tasks-per-node",
        str(PER_NODE), "--python", job_python, "--submit", "--wait", "--wait-timeout", "330",
        *(["--record", str(records)] if record else [])]), cwd=tmp_path, env=env, capture_output=True, text=True,
        timeout=360)
    print(f"{backend}{' recorded' if record else ''}: 2 nodes x 2 tasks in {time.monotonic() - started:.1f}s")
    detail = f"\n--- stdout ---\n{proc.stdout[-4000:]}\n--- stderr ---\n{proc.stderr[-4000:]}\n{cluster.logs()}"
    assert proc.returncode == 0 and "COMPLETED (exit code 0:0)" in proc.stdout, detail
    states = [line.split("RANKSTATE ", 1)[1].split() for line in proc.stdout.splitlines() if "RANKSTATE " in line]
    assert len(states) == RANKS, detail
    hosts = sorted(s[0] for s in states)
    assert hosts == ["n1", "n1", "n2", "n2"], hosts                         # 2 ranks on each node
    assert len({s[1] for s in states}) == 1, states                         # the same weights everywhere
    assert {int(s[2]) for s in states} == {ORIGINAL_STEPS // RANKS}, states  # 1/N of the steps each
    assert (tmp_path / "final.weights.h5").exists()
    sbatch = next(tmp_path.glob("*.sbatch")).read_text()
    assert not [x for x in sbatch.splitlines() if x.split(" ", 1)[0] in ("horovodrun", "ssh", "mpirun")]
    if record:
        ranks = read_records(records, RANKS)
        assert [r.rank for r in ranks] == list(range(RANKS)) and not any(r.missing for r in ranks), ranks
        assert len({r.trainable_sha256 for r in ranks}) == 1 and ranks[0].trainable_count > 0
        assert [r.optimizer_steps for r in ranks] == [ORIGINAL_STEPS // RANKS] * RANKS
        if backend == "tf-distribute":
            assert all(r.multi_worker_size == RANKS for r in ranks), [r.strategies for r in ranks]
        # written once, by rank 0 (tf.distribute's other workers save into temporary directories they remove)
        written = [(r.rank, f.path) for r in ranks for f in r.files if f.exists_at_exit
                   and not f.removed_temp and f.path.endswith("final.weights.h5")]
        assert [rank for rank, _ in written] == [0], written
