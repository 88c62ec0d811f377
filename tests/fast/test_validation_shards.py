"""fit()'s validation data already batched at its source (Keras's
*_dataset_from_* readers) under Horovod: sharded by whole batches, a set of
fewer batches than ranks would be empty on every rank; it is evaluated
whole there instead. The runtime proof: tests/slow/test_validation_one_batch_runtime.py."""
from pathlib import Path

from tfdist.api import convert_file

SCRIPT = Path(__file__).resolve().parents[1] / "slow" / "validation" / "one_batch_validation.py"


def test_a_batched_validation_set_is_never_cut_into_fewer_pieces_than_ranks():
    result = convert_file(str(SCRIPT), backend="horovod")
    assert result.status == "converted", result.error
    text = result.data.decode()
    val = next(line for line in text.splitlines() if "series[800 + WINDOW:869, 0]" in line)
    assert ".apply(lambda ds: ds if 0 <= ds.cardinality() < hvd.size() else ds.shard(hvd.size(), hvd.rank())" in val
    train = next(line for line in text.splitlines() if "series[WINDOW:800, 0]" in line)
    assert "lambda ds: ds.shard(hvd.size(), hvd.rank()).take(ds.cardinality() // hvd.size())" in train
