"""A training loop inside a tf.function (the whole epoch traced): the
optimizer is built on the model's variables in the scope right after both
exist, in every spelling of the decorator; where tfdist cannot name both
there (a legacy optimizer, a model made in a function), the same edit is a
warning. Runtime: tests/slow/test_traced_loop_runtime.py."""
from __future__ import annotations

from pathlib import Path

import pytest

from tfdist.api import convert_source

SCRIPT = (Path(__file__).resolve().parents[1] / "slow" / "traced_loop" / "train.py").read_text()
BUILD = "    optimizer.build(model.trainable_variables)\n"


@pytest.mark.parametrize("decorator", ["@tf.function", "@tf.function(reduce_retracing=True)"])
def test_the_optimizer_is_built_in_the_scope_before_a_traced_loop(decorator):
    source = SCRIPT.replace("@tf.function", decorator)
    result = convert_source(source.encode(), "train.py", backend="tf-distribute")
    assert result.status == "converted", result.error
    assert ("    optimizer = tf.keras.optimizers.Adam(0.01 * strategy.num_replicas_in_sync)\n" + BUILD) in result.code
    assert not result.warnings
    again = convert_source(result.data, "train.py", backend="tf-distribute")
    assert again.status in ("already-distributed", "unchanged") and again.data == result.data


def test_a_loop_not_traced_gets_no_build():
    result = convert_source(SCRIPT.replace("@tf.function\n", "").encode(), "train.py", backend="tf-distribute")
    assert result.status == "converted" and "optimizer.build(" not in result.code


def test_a_legacy_optimizer_is_warned_with_the_edit():
    source = SCRIPT.replace("tf.keras.optimizers.Adam(0.01)", "tf.keras.optimizers.legacy.Adam(0.01)")
    result = convert_source(source.encode(), "train.py", backend="tf-distribute")
    assert result.status == "converted", result.error
    assert "optimizer.build(" not in result.code
    assert any("optimizer.build(model.trainable_variables) inside strategy.scope()" in w.message
               for w in result.warnings), [w.message for w in result.warnings]
