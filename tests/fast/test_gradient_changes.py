"""Gradients a tape loop or a Keras train_step changes between
``tape.gradient`` and the optimizer (clipping by global norm, norm or value,
scaling) under --backend tf-distribute: the optimizer sums the replicas'
gradients inside apply, so the conversion sums them where the tape returns
them (``global_gradients(...)``) and hands them to the optimizer once (the
first replica whole, the others zeros: ``replica_part(...)``): the change then acts on the gradient of the global
batch, as in one process. Each shape below is the same meaning written
another way; the gradients are followed by binding, not by name. The
runtime proof (same weights as one process on the global batch, and the
previous conversion's different ones) is tests/slow/test_gradient_clipping_runtime.py.
"""
from __future__ import annotations

import textwrap

import pytest

from tfdist.api import convert_source

HEAD = '''import numpy as np
import tensorflow as tf

x = np.random.RandomState(0).randn(256, 4).astype("float32")
y = x.sum(axis=1, keepdims=True)
ds = tf.data.Dataset.from_tensor_slices((x, y)).batch(32)
model = tf.keras.Sequential([tf.keras.Input((4,)), tf.keras.layers.Dense(1)])
optimizer = tf.keras.optimizers.SGD(0.1)
'''
LOOP = '''

for xb, yb in ds:
    train_step(xb, yb)
'''


def _convert(step: str):
    src = HEAD + "\n\n" + textwrap.dedent(step).strip("\n") + LOOP
    result = convert_source(src.encode(), "train.py", backend="tf-distribute")
    assert result.status == "converted", (result.error, result.error_line)
    return result.data.decode()


STEP = '''
@tf.function
def train_step(xb, yb):
    with tf.GradientTape() as tape:
        loss = tf.reduce_mean(tf.square(model(xb) - yb))
{between}
'''

#: the same clipped step, written several ways: (what lies between the tape and the optimizer)
CLIPPED = {
    "global norm, reassigned": '''
    grads = tape.gradient(loss, model.trainable_variables)
    grads, _ = tf.clip_by_global_norm(grads, 1.0)
    optimizer.apply_gradients(zip(grads, model.trainable_variables))''',
    "norm per tensor, a comprehension": '''
    grads = tape.gradient(loss, model.trainable_variables)
    clipped = [tf.clip_by_norm(g, 1.0) for g in grads]
    optimizer.apply_gradients(zip(clipped, model.trainable_variables))''',
    "by value, inside the optimizer's argument": '''
    grads = tape.gradient(loss, model.trainable_variables)
    optimizer.apply_gradients(zip([tf.clip_by_value(g, -0.5, 0.5) for g in grads], model.trainable_variables))''',
    "clipped where the tape returns them": '''
    grads, _ = tf.clip_by_global_norm(tape.gradient(loss, model.trainable_variables), 1.0)
    optimizer.apply_gradients(zip(grads, model.trainable_variables))''',
    "pairs built first, Keras 3 apply": '''
    grads = tape.gradient(loss, model.trainable_variables)
    grads = [g * 0.5 for g in grads]
    optimizer.apply(grads, model.trainable_variables)''',
    "through a helper of the module": '''
    grads = tape.gradient(loss, model.trainable_variables)
    grads = clip_all(grads)
    optimizer.apply_gradients(zip(grads, model.trainable_variables))''',
}


@pytest.mark.parametrize("between", list(CLIPPED.values()), ids=list(CLIPPED))
def test_changed_gradients_are_summed_then_handed_on_as_one_share(between):
    helper = "def clip_all(grads):\n    return [tf.clip_by_norm(g, 1.0) for g in grads]\n\n\n"
    text = _convert(helper + STEP.format(between=textwrap.dedent(between).strip("\n").replace("\n", "\n    ")
                                         .join(["    ", ""])))
    assert "global_gradients(tape.gradient(" in text, text
    assert text.count("global_gradients(tape.gradient(") == 1
    assert "replica_part(" in text.split("def train_step")[1]
    assert text.count("def global_gradients(") == 1 and text.count("def replica_part(") == 1


def test_gradients_handed_on_unchanged_are_left_to_the_optimizer():
    text = _convert(STEP.format(between='''    grads = tape.gradient(loss, model.trainable_variables)
    pairs = list(zip(grads, model.trainable_variables))
    optimizer.apply_gradients(pairs)'''))
    assert "global_gradients" not in text and "replica_part" not in text


def test_a_gan_whose_one_step_clips_sums_that_step_only():
    """Two steps, each with its own ``grads``: the unclipped step's
    gradients are another value (followed by binding, not by name)."""
    text = _convert('''
d_opt = tf.keras.optimizers.Adam(1e-3)


@tf.function
def train_step(xb, yb):
    with tf.GradientTape() as tape:
        loss = tf.reduce_mean(tf.square(model(xb) - yb))
    grads = tape.gradient(loss, model.trainable_variables)
    grads, _ = tf.clip_by_global_norm(grads, 1.0)
    optimizer.apply_gradients(zip(grads, model.trainable_variables))


@tf.function
def other_step(xb, yb):
    with tf.GradientTape() as tape:
        loss = tf.reduce_mean(tf.abs(model(xb) - yb))
    grads = tape.gradient(loss, model.trainable_variables)
    d_opt.apply_gradients(zip(grads, model.trainable_variables))
''' + "\n\nfor xb, yb in ds:\n    other_step(xb, yb)\n")
    first, second = text.split("def other_step")
    assert "global_gradients(tape.gradient(" in first and "replica_part(zip(grads" in first
    assert "global_gradients" not in second and "replica_part" not in second


def test_an_optimizer_helper_shared_by_clipped_and_plain_gradients_gets_both_summed():
    """A helper applying what it is handed: every gradient reaching it is
    summed, or the plain one would reach the optimizer as a zero or as one share only."""
    text = _convert('''
def apply(grads):
    optimizer.apply_gradients(zip(grads, model.trainable_variables))


@tf.function
def train_step(xb, yb):
    with tf.GradientTape() as tape:
        loss = tf.reduce_mean(tf.square(model(xb) - yb))
    grads = tape.gradient(loss, model.trainable_variables)
    apply([tf.clip_by_norm(g, 1.0) for g in grads])
    with tf.GradientTape() as tape2:
        loss2 = tf.reduce_mean(tf.abs(model(xb) - yb))
    apply(tape2.gradient(loss2, model.trainable_variables))
''')
    assert text.count("global_gradients(tape") == 2, text
    assert "optimizer.apply_gradients(replica_part(zip(grads, model.trainable_variables)))" in text


def test_a_gradient_penalty_with_respect_to_inputs_is_not_summed():
    text = _convert('''
@tf.function
def train_step(xb, yb):
    with tf.GradientTape() as tape:
        with tf.GradientTape() as gp_tape:
            gp_tape.watch(xb)
            pred = model(xb)
        slopes = gp_tape.gradient(pred, [xb])[0]
        penalty = tf.reduce_mean(tf.square(tf.norm(slopes, axis=1) - 1.0))
        loss = tf.reduce_mean(tf.square(pred - yb)) + penalty
    grads = tape.gradient(loss, model.trainable_variables)
    grads, _ = tf.clip_by_global_norm(grads, 1.0)
    optimizer.apply_gradients(zip(grads, model.trainable_variables))
''')
    assert "global_gradients(gp_tape" not in text
    assert "global_gradients(tape.gradient(" in text


@pytest.mark.parametrize("clip", ["clipnorm=1.0", "global_clipnorm=1.0", "clipvalue=0.5"])
def test_fit_with_a_clipping_optimizer_clips_the_summed_gradients(clip):
    """Keras's own train_step: no step to sum the gradients in, and Keras 3
    clips each replica's share: the optimizer is wrapped where it is built so
    that it clips their sum (exact against one process on the global batch:
    tests/slow/test_gradient_clipping_runtime.py, fit_global_clipnorm)."""
    src = f'''import numpy as np
import tensorflow as tf

x = np.random.randn(256, 4).astype("float32")
y = x.sum(axis=1, keepdims=True)
model = tf.keras.Sequential([tf.keras.Input((4,)), tf.keras.layers.Dense(1)])
model.compile(optimizer=tf.keras.optimizers.Adam(1e-3, {clip}), loss="mse")
model.fit(x, y, batch_size=32, epochs=2)
'''
    result = convert_source(src.encode(), "train.py", backend="tf-distribute")
    assert result.status == "converted", result.error
    assert [w for w in result.warnings if w.level == "WARNING"] == [], result.warnings
    assert f"optimizer=clip_after_summing(tf.keras.optimizers.Adam(1e-3 * strategy.num_replicas_in_sync, {clip}))" \
        in result.code
    assert "optimizer._clip_gradients = clip_sum" in result.code
    changed = [c for c in result.changes if "clips their sum instead" in c.message]
    assert len(changed) == 1 and changed[0].line == 7 and clip in changed[0].message, result.changes
    plain = convert_source(src.replace(", " + clip, "").encode(), "train.py", backend="tf-distribute")
    assert "clip_after_summing" not in plain.code
