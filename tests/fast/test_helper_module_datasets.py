"""A tf.data dataset another module of the project builds and batches,
read by a tape loop through ``next(iterator)`` or a ``for`` over it: the
shape of a held-out repository's GAN trainers (``dataset, shape, n =
make_anime_dataset(paths, batch_size)``, then ``next(db_iter)`` in the
step). tf-distribute refused it ("this training loop does not read a
tf.data dataset") though Horovod converted it. The call is followed into
the other module: the dataset is distributed, its batch kept per replica
through the argument that sets it at the call (the helper is not edited),
its data in memory split by sample; the same program with the dataset
built in the script converts the same way. Each spelling is one program."""
from __future__ import annotations

import pytest

from tfdist.api import convert_file

HELPERS = """\
import tensorflow as tf


def make_dataset(images, batch_size):
    ds = tf.data.Dataset.from_tensor_slices(images).shuffle(256, seed=7).batch(batch_size, drop_remainder=True)
    return ds, images.shape[1:], len(images)


def make_ds(images, batch_size=64):
    return tf.data.Dataset.from_tensor_slices(images).shuffle(256, seed=7).batch(batch_size, drop_remainder=True)
"""

LOOP = """\
import numpy as np
import tensorflow as tf
from tensorflow import keras
{imp}

images = np.random.random((512, 8)).astype("float32")
{data}
generator = keras.Sequential([keras.Input((4,)), keras.layers.Dense(8)])
discriminator = keras.Sequential([keras.Input((8,)), keras.layers.Dense(1)])
g_optimizer = keras.optimizers.Adam(2e-4)
d_optimizer = keras.optimizers.Adam(2e-4)
bce = keras.losses.BinaryCrossentropy(from_logits=True)
{loop}
    batch_z = tf.random.normal([64, 4])
    with tf.GradientTape() as tape:
        fake = generator(batch_z, training=True)
        d_loss = bce(tf.ones([64, 1]), discriminator(batch_x)) + bce(tf.zeros([64, 1]), discriminator(fake))
    grads = tape.gradient(d_loss, discriminator.trainable_variables)
    d_optimizer.apply_gradients(zip(grads, discriminator.trainable_variables))
    with tf.GradientTape() as tape:
        g_loss = bce(tf.ones([64, 1]), discriminator(generator(batch_z, training=True)))
    grads = tape.gradient(g_loss, generator.trainable_variables)
    g_optimizer.apply_gradients(zip(grads, generator.trainable_variables))
"""

NEXT = "db_iter = iter(dataset.repeat(10))\n"
STEPS = "for step in range(20):\n    batch_x = next(db_iter)"
OVER = "for epoch in range(3):\n  for batch_x in dataset:"

SPELLINGS = {  # (import, data lines, loop head, the call as converted)
    "tuple, next()": ("from data_helpers import make_dataset", "dataset, shape, n = make_dataset(images, 64)\n" + NEXT,
                      STEPS, "make_dataset(images, 64 * strategy.num_replicas_in_sync)"),
    "returned, next()": ("from data_helpers import make_ds", "dataset = make_ds(images, 64)\n" + NEXT, STEPS,
                         "make_ds(images, 64 * strategy.num_replicas_in_sync)"),
    "module attribute, keyword": ("import data_helpers as dh", "dataset = dh.make_ds(images, batch_size=64)\n" + NEXT,
                                  STEPS, "dh.make_ds(images, batch_size=64 * strategy.num_replicas_in_sync)"),
    "default batch, for loop": ("from data_helpers import make_ds", "dataset = make_ds(images)\n", OVER,
                                "make_ds(images, batch_size=64 * strategy.num_replicas_in_sync)"),
}


def _script(tmp_path, imp, data, loop):
    (tmp_path / "data_helpers.py").write_text(HELPERS)
    body = LOOP.format(imp=imp, data=data, loop=loop)
    if loop == OVER:  # the loop body one level deeper, two-space indents kept as written
        head, rest = body.split(OVER + "\n")
        body = head + OVER + "\n" + "".join("  " + line + "\n" if line else "\n" for line in rest.split("\n")[:-1])
    script = tmp_path / "train.py"
    script.write_text(body)
    return script


@pytest.mark.parametrize("spelling", sorted(SPELLINGS))
def test_a_dataset_of_a_helper_module_is_distributed_with_its_batch_per_replica(tmp_path, spelling):
    imp, data, loop, call = SPELLINGS[spelling]
    result = convert_file(_script(tmp_path, imp, data, loop), backend="tf-distribute")
    assert result.status == "converted", result.error
    assert call in result.code, result.code
    assert "strategy.experimental_distribute_dataset(" in result.code, result.code
    assert "def train_step(" in result.code and "run_on_replicas(train_step" in result.code, result.code
    assert not [w.message for w in result.warnings if w.level == "WARNING"], result.warnings


def test_the_same_program_with_the_dataset_built_in_the_script_converts_alike(tmp_path):
    """The helper inlined: the same step, the batch multiplied where it is written."""
    imp, data, loop, _ = SPELLINGS["returned, next()"]
    inline = ("dataset = tf.data.Dataset.from_tensor_slices(images).shuffle(256, seed=7)"
              ".batch(64, drop_remainder=True)\n" + NEXT)
    helper = convert_file(_script(tmp_path, imp, data, loop), backend="tf-distribute")
    local = convert_file(_script(tmp_path, "", inline, loop), backend="tf-distribute")
    assert local.status == helper.status == "converted"
    assert ".batch(64 * strategy.num_replicas_in_sync, drop_remainder=True)" in local.code
    step = lambda code: code[code.index("    # tf.distribute: one training step"):]  # noqa: E731
    assert step(helper.code) == step(local.code)


def test_a_helper_dataset_without_a_batch_argument_is_warned_with_the_helpers_line(tmp_path):
    """The helper batches by a number of its own: that is the global batch
    now, and the edit is named in the helper (file and line), not guessed."""
    (tmp_path / "data_helpers.py").write_text(HELPERS.replace("batch(batch_size, drop", "batch(64, drop"))
    script = tmp_path / "train.py"
    script.write_text(LOOP.format(imp="from data_helpers import make_ds", data="dataset = make_ds(images)\n" + NEXT,
                                  loop=STEPS))
    result = convert_file(script, backend="tf-distribute")
    assert result.status == "converted", result.error
    warned = [w.message for w in result.warnings if w.level == "WARNING"]
    assert any("data_helpers.py, line 10" in m and "global batch" in m for m in warned), warned
