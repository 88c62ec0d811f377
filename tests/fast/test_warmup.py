"""--warmup-epochs: pipeline keys with ``warmup-K`` built on demand, what is
refused, and warmed-up output converted again changes nothing."""
from pathlib import Path

import pytest

from tfdist.api import convert_file, convert_source
from tfdist.assembly import pipeline_key

FIXTURES = Path(__file__).parent / "fixtures"
WARMUP_CASES = sorted((p.parent, p.name[len("expected."):-len(".py")])
                      for p in FIXTURES.glob("*/*/expected.*+warmup-*.py"))
KERAS = FIXTURES / "keras" / "sequential_dataset" / "input.py"


def test_there_are_warmup_fixtures_for_both_engines():
    keys = {key.split("+")[0] for _, key in WARMUP_CASES}
    assert keys == {"horovod", "tf-distribute"}


@pytest.mark.parametrize("case,key", WARMUP_CASES, ids=lambda v: v if isinstance(v, str) else v.name)
def test_warmed_up_output_converted_again_changes_nothing(case, key):
    data = (case / f"expected.{key}.py").read_bytes()
    again = convert_source(data, "expected.py", backend=key)
    assert again.status == "already-distributed"
    assert again.data == data


@pytest.mark.parametrize("k", [1, 2, 7, 40])
def test_any_number_of_epochs_is_a_key(k):
    key = pipeline_key("horovod", "lr-sqrt", f"warmup-{k}")
    assert key == f"horovod+lr-sqrt+warmup-{k}"
    result = convert_file(KERAS, backend=key)
    assert result.status == "converted"
    assert f"LearningRateWarmup({k}, hvd.size() ** 0.5)".encode() in result.data
    rated = [c for c in result.changes if c.rule == "lr-scaling"]
    assert rated and all(f"--warmup-epochs {k}" in c.message for c in rated)


@pytest.mark.parametrize("key,needle", [
    ("horovod+lr-none+warmup-1", "--lr-scaling linear or sqrt"),
    ("tf-distribute+lr-none+warmup-2", "--lr-scaling linear or sqrt"),
    ("horovod+warmup-0", ">= 1"),
    ("horovod+warmup-x", ">= 1"),
    ("horovod+warmup-1+warmup-2", "two values"),
    ("horovod+warmup", "unknown option"),
])
def test_bad_keys_are_refused_with_the_reason(key, needle):
    """A key no pipeline can be built for fails the file (nothing written), saying why."""
    result = convert_file(KERAS, backend=key)
    assert result.status == "error" and result.data is None
    assert needle in result.error


@pytest.mark.parametrize("pattern,case", [("gradient_tape", "tf_function_step"), ("session", "chained_minimize"),
                                          ("monitored_session", "chief_only_hooks")])
def test_other_training_loops_are_refused_not_guessed(pattern, case):
    """Their steps per epoch are not known at conversion: refused, nothing written."""
    path = FIXTURES / pattern / case / "input.py"
    result = convert_source(path.read_bytes(), str(path), backend="horovod+warmup-1")
    assert result.status == "unsupported" and result.data is None
    assert "--warmup-epochs is applied to Keras fit() only" in result.error


@pytest.mark.parametrize("backend", ["horovod+warmup-1", "tf-distribute+warmup-1"])
def test_a_schedule_in_fit_is_refused_at_its_line(backend):
    src = b'''import tensorflow as tf

schedule = tf.keras.optimizers.schedules.ExponentialDecay(0.1, decay_steps=100, decay_rate=0.9)
model = tf.keras.Sequential([tf.keras.layers.Dense(1)])
model.compile(optimizer=tf.keras.optimizers.SGD(schedule), loss="mse")
model.fit(tf.data.Dataset.range(8).batch(2), epochs=1)
'''
    result = convert_source(src, "train.py", backend=backend)
    assert result.status == "unsupported" and result.data is None
    assert result.error_line == 3 and "schedule" in result.error
    assert convert_source(src, "train.py", backend=backend.split("+")[0]).status == "converted"
