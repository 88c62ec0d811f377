"""`tfdist verify`: PASS for correct Horovod scripts, FAIL with the right
reason for each deliberately broken conversion."""
from __future__ import annotations

import json
import math

import pytest

from conftest import SCRIPTS, missing_stack, require_module, run_tfdist
from tfdist.runtime.verify import verify_script

pytestmark = pytest.mark.slow

KERAS = SCRIPTS / "keras_hvd.py"
TAPE = SCRIPTS / "tape_hvd.py"


@pytest.fixture(autouse=True)
def _needs_runtime(runtime_python, monkeypatch):
    # verify_script runs the ranks with the interpreter horovodrun belongs to;
    # the in-process API calls need that interpreter to be this one.
    import sys

    if runtime_python != sys.executable:
        missing_stack("run this module with the runtime environment's python")
    monkeypatch.setenv("TF_CPP_MIN_LOG_LEVEL", "2")


def _only_reason(report, needle):
    assert not report.passed, report.format_text()
    assert len(report.reasons) == 1, report.format_text()
    assert needle in report.reasons[0], report.format_text()
    return report.reasons[0]


@pytest.mark.timeout(300)
def test_cli_verify_passes_correct_keras_script(runtime_python, tmp_path):
    res = run_tfdist(runtime_python, ["verify", "--converted", "--json", "--timeout", "240", str(KERAS)],
                     tmp_path, timeout=290)
    assert res.returncode == 0, res
    report = json.loads(res.stdout)
    assert report["result"] == "PASS" and report["reasons"] == []
    ref = report["reference"]["ranks"][0]
    ranks = report["distributed"]["ranks"]
    assert [r["rank"] for r in ranks] == [0, 1]
    assert ref["optimizer_steps"] == 32                       # 256 samples / batch 16 x 2 epochs
    assert [r["optimizer_steps"] for r in ranks] == [16, 16]  # sharded in two
    assert [r["exit_code"] for r in ranks] == [0, 0]
    assert ranks[0]["trainable_sha256"] == ranks[1]["trainable_sha256"]
    assert ranks[0]["trainable_count"] == 4
    # The user's SGD (0 steps) and Horovod's DistributedOptimizer subclass (16 steps) are both seen.
    assert sorted(o["iterations"] for o in ranks[0]["keras_optimizers"]) == [0, 16]
    written = {f["path"].rsplit("/distributed/", 1)[1]: f["kind"] for f in ranks[0]["files"]}
    assert written == {"ckpt/weights.1.h5": "model", "ckpt/weights.2.h5": "model", "logs/train": "summary"}
    assert ranks[1]["files"] == []


@pytest.mark.timeout(300)
def test_missing_broadcast_fails_on_variables():
    report = verify_script(KERAS, np=2, args=["--break", "broadcast"], converted=True, timeout=240)
    reason = _only_reason(report, "final trainable variables differ between ranks")
    assert "rank 1 differs from rank 0" in reason
    r0, r1 = report.distributed.ranks
    assert r0.trainable_sha256 != r1.trainable_sha256
    assert (r0.optimizer_steps, r1.optimizer_steps) == (16, 16)
    assert "FAIL: final trainable variables differ" in report.format_text()


@pytest.mark.timeout(300)
def test_checkpoint_on_every_rank_fails_on_writers():
    report = verify_script(KERAS, np=2, args=["--break", "checkpoint"], converted=True, timeout=240)
    reason = _only_reason(report, "only rank 0 may write checkpoints/summaries/models")
    listed = reason.split("rank 1 wrote model/summary files: ", 1)[1].split(", ")
    assert sorted(listed) == ["ckpt/rank1-weights.1.h5", "ckpt/rank1-weights.2.h5", "logs/train"]
    r0, r1 = report.distributed.ranks
    assert r0.trainable_sha256 == r1.trainable_sha256
    assert {f.kind for f in r1.files} == {"model", "summary"}


@pytest.mark.timeout(300)
def test_correct_tape_script_passes():
    report = verify_script(TAPE, np=2, converted=True, timeout=240)
    assert report.passed, report.format_text()
    assert report.reference.ranks[0].optimizer_steps == 32    # 192 / 12 x 2 epochs
    assert [r.optimizer_steps for r in report.distributed.ranks] == [16, 16]
    assert [r.steps_source for r in report.distributed.ranks] == ["keras-iterations"] * 2
    kinds = {f.path.rsplit("/distributed/", 1)[1]: f.kind for f in report.distributed.ranks[0].files}
    assert kinds["ckpt/ckpt-2"] == "checkpoint" and kinds["logs"] == "summary"
    assert report.distributed.ranks[1].files == []


@pytest.mark.timeout(300)
def test_unsharded_data_fails_on_steps():
    report = verify_script(TAPE, np=2, args=["--break", "shard"], converted=True, timeout=240)
    reason = _only_reason(report, "optimizer steps per rank are not ~1/2 of the original's 32")
    assert "rank 0: 32, rank 1: 32" in reason
    assert "data not sharded" in reason


@pytest.mark.timeout(300)
def test_converted_by_tfdist_with_steps_cap():
    require_module("tfdist.api")
    steps = 6
    report = verify_script(SCRIPTS / "keras_single.py", np=2, steps=steps, timeout=240)
    assert report.conversion_status == "converted"
    assert report.passed, report.format_text()
    ref = report.reference.ranks[0]
    assert ref.cap_applied and ref.optimizer_steps == steps and ref.planned_steps == 32
    for r in report.distributed.ranks:
        assert r.cap_applied
        assert r.optimizer_steps == math.ceil(steps / 2)
        assert r.planned_steps == 16
    assert "(steps shown as taken/planned" in report.format_text()


@pytest.mark.timeout(300)
def test_tf1_monitored_training_session_passes():
    report = verify_script(SCRIPTS / "tf1_hvd.py", np=2, converted=True, timeout=240)
    assert report.passed, report.format_text()
    assert report.reference.ranks[0].optimizer_steps == 20
    for r in report.distributed.ranks:
        assert (r.optimizer_steps, r.steps_source, r.global_step) == (10, "tf1-session-runs", 10)
        assert r.trainable_count == 2
    r0, r1 = report.distributed.ranks
    assert r0.trainable_sha256 == r1.trainable_sha256
    kinds = {f.path.rsplit("/distributed/", 1)[1]: f.kind for f in r0.files}
    assert kinds["ckpt/model.ckpt-10"] == "checkpoint" and kinds["ckpt"] == "summary"
    assert r1.files == []
