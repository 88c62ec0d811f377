"""Data sources beyond from_tensor_slices, converted and really run on 2 ranks.

The scripts read TensorFlow Datasets through ``tests/slow/support/
tensorflow_datasets`` (synthetic data under real tfds names, with tfds'
return shapes; the real package cannot download here). Each conversion must
exit 0 on every rank, leave every rank with bit-identical trainable
variables, and give each rank half the single-process optimizer steps.
"""
from pathlib import Path

import pytest

from tfdist.api import convert_file
from tfdist.runtime.verify import run_and_observe

pytestmark = pytest.mark.slow

ROOT = Path(__file__).resolve().parents[2]
SUPPORT = Path(__file__).resolve().parent / "support"
FIXTURES = ROOT / "tests" / "fast" / "fixtures"
TIMEOUT = 300


def _env():
    import os
    env = dict(os.environ)
    env["PYTHONPATH"] = os.pathsep.join(p for p in (str(SUPPORT), env.get("PYTHONPATH", "")) if p)
    return env


def _run_pair(script: Path, tmp: Path, np: int = 2):
    result = convert_file(script)
    assert result.status == "converted", (result.error, result.error_line)
    assert not [w for w in result.warnings if w.level == "WARNING"], [w.message for w in result.warnings]
    original = tmp / "original" / "train.py"
    original.parent.mkdir(parents=True)
    original.write_bytes(script.read_bytes())
    converted = tmp / "converted" / "train.py"
    converted.parent.mkdir(parents=True)
    converted.write_bytes(result.data)
    ref = run_and_observe(original, 1, tmp / "run1", TIMEOUT, single=True, env=_env(),
                          log_path=tmp / "original.log", label="original")
    dist = run_and_observe(converted, np, tmp / "run2", TIMEOUT, single=False, env=_env(),
                           log_path=tmp / "distributed.log", label=f"{np} ranks")
    return ref, dist


def _check(ref, dist, np: int = 2):
    assert not ref.timed_out and ref.returncode == 0, ref.tail[-20:]
    (single,) = ref.ranks
    assert single.exit_code == 0 and single.optimizer_steps > 0
    assert not dist.timed_out, dist.tail[-20:]
    assert dist.returncode == 0, dist.tail[-30:]
    ranks = dist.ranks
    assert sorted(r.rank for r in ranks) == list(range(np))
    assert all(r.exit_code == 0 for r in ranks), [(r.rank, r.exit_code, r.exception) for r in ranks]
    digests = {r.trainable_sha256 for r in ranks}
    assert None not in digests and len(digests) == 1, [(r.rank, r.trainable_sha256) for r in ranks]
    # Exactly half: the stand-in's 1,024 samples split evenly, batch 64.
    assert [r.optimizer_steps for r in ranks] == [single.optimizer_steps // np] * np, (
        single.optimizer_steps, [r.optimizer_steps for r in ranks])


@pytest.mark.timeout(2 * TIMEOUT + 60)
def test_tfds_through_a_helper_function_in_keras_fit(tmp_path):
    """tfds.load inside load_data(): the split is sharded where it is loaded."""
    script = FIXTURES / "keras" / "source_tfds_helper" / "input.py"
    ref, dist = _run_pair(script, tmp_path)
    _check(ref, dist)
    # The stand-in's split really was cut in two: each rank read 512 of the 1,024 samples.
    assert ref.ranks[0].optimizer_steps == 3 * 1024 // 64


@pytest.mark.timeout(2 * TIMEOUT + 60)
def test_sequence_subclass_read_rank_strided(tmp_path):
    """A keras.utils.Sequence given to fit(): read through the rank-strided wrapper."""
    script = FIXTURES / "keras" / "source_sequence_subclass" / "input.py"
    ref, dist = _run_pair(script, tmp_path)
    _check(ref, dist)
    assert ref.ranks[0].optimizer_steps == 4 * 2048 // 64
