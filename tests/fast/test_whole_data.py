"""Loops whose every step trains on the whole data (facts/whole_data.py),
under --backend tf-distribute: each step run on every replica on all of it,
the script's learning rate kept, nothing divided but the loss; the same
program written as a helper called from the loop, inside main(), with the
variables updated by hand. A loop that cuts its batch, or reads its step
number in the step, is no such loop."""
from __future__ import annotations

import textwrap

import pytest

from tfdist.api import convert_source

HEAD = '''import numpy as np
import tensorflow as tf

x = tf.constant(np.random.RandomState(0).randn(64, 3).astype("float32"))
y = tf.reduce_sum(x, axis=1, keepdims=True)
model = tf.keras.Sequential([tf.keras.Input((3,)), tf.keras.layers.Dense(1)])
optimizer = tf.keras.optimizers.SGD(learning_rate=0.1)
'''
INLINE = HEAD + '''
for epoch in range(20):
    with tf.GradientTape() as tape:
        loss = tf.reduce_mean(tf.square(model(x) - y))
    grads = tape.gradient(loss, model.trainable_variables)
    optimizer.apply_gradients(zip(grads, model.trainable_variables))
    print(epoch, float(loss))
'''
HELPER = HEAD + '''

def train(model, inputs, targets):
    with tf.GradientTape() as tape:
        loss = tf.reduce_mean(tf.square(model(inputs) - targets))
    grads = tape.gradient(loss, model.trainable_variables)
    optimizer.apply_gradients(zip(grads, model.trainable_variables))
    return loss


for epoch in range(20):
    loss = train(model, x, y)
    print(epoch, float(loss))
'''
# the tape in a helper returning the gradients, the optimizer step in the loop (TensorFlow's
# "custom training walkthrough" shape, on the whole data): the step is the helper's call and the apply
GRADIENT_HELPER = HEAD + '''

def grad(model, inputs, targets):
    with tf.GradientTape() as tape:
        loss = tf.reduce_mean(tf.square(model(inputs) - targets))
    return loss, tape.gradient(loss, model.trainable_variables)


for epoch in range(20):
    loss, grads = grad(model, x, y)
    optimizer.apply_gradients(zip(grads, model.trainable_variables))
    print(epoch, float(loss))
'''
# the same with the gradients alone returned, read in the apply itself
GRADIENT_HELPER_INLINE = GRADIENT_HELPER.replace("return loss, tape.gradient(", "return tape.gradient(").replace(
    "    loss, grads = grad(model, x, y)\n    optimizer.apply_gradients(zip(grads, model.trainable_variables))\n"
    "    print(epoch, float(loss))\n",
    "    optimizer.apply_gradients(zip(grad(model, x, y), model.trainable_variables))\n")
IN_MAIN = "def main():\n" + textwrap.indent(INLINE, "    ") + "\n\nmain()\n"
# the range bound to a name first (TensorFlow's "basic training loops" guide)
NAMED_RANGE = INLINE.replace("for epoch in range(20):", "epochs = range(20)\nfor epoch in epochs:")
WHOLE = "every step of this loop trains on the whole data"


def _tfd(src):
    result = convert_source(src.encode(), "fit.py", backend="tf-distribute")
    assert result.status == "converted", result.error
    return result, result.data.decode()


@pytest.mark.parametrize("src", [INLINE, HELPER, IN_MAIN, NAMED_RANGE, GRADIENT_HELPER, GRADIENT_HELPER_INLINE],
                         ids=["inline", "helper", "in main()", "named range", "gradient helper",
                              "gradient helper in the apply"])
def test_a_loop_of_whole_data_steps_runs_each_on_every_replica_at_the_scripts_rate(src):
    result, text = _tfd(src)
    assert any(WHOLE in w.message for w in result.warnings)
    assert result.full_batch
    assert "learning_rate=0.1)" in text  # not scaled: the global batch is the original's
    assert text.count("/ strategy.num_replicas_in_sync") == 1  # the loss, each replica's share
    assert "range(20)" in text and "experimental_distribute" not in text  # steps and data as they were
    assert "run_on_replicas(" in text


def test_a_gradient_helpers_call_is_in_the_step_it_feeds():
    """The helper's call and the apply make one step run on every replica (the gradients are
    never computed outside the replicas and handed in)."""
    result, text = _tfd(GRADIENT_HELPER)
    assert "def train_step():\n        loss, grads = grad(model, x, y)\n        optimizer.apply_gradients(" in text
    assert "loss = run_on_replicas(train_step)" in text


def test_variables_updated_by_hand_keep_their_rate():
    src = INLINE.replace("    optimizer.apply_gradients(zip(grads, model.trainable_variables))\n",
                         "    for v, g in zip(model.trainable_variables, grads):\n        v.assign_sub(0.1 * g)\n")
    result, text = _tfd(src)
    assert any(WHOLE in w.message for w in result.warnings)
    assert 'update_on_replicas(v, "assign_sub", 0.1 * g)' in text


@pytest.mark.parametrize("edit", [
    # the step reads the step number: another slice of the data each step
    ("model(x) - y", "model(x[epoch:epoch + 8]) - y[epoch:epoch + 8]"),
    # a batch cut before the step
    ("    with tf.GradientTape() as tape:\n        loss = tf.reduce_mean(tf.square(model(x) - y))",
     "    idx = np.random.randint(0, 64, 16)\n    xb, yb = tf.gather(x, idx), tf.gather(y, idx)\n"
     "    with tf.GradientTape() as tape:\n        loss = tf.reduce_mean(tf.square(model(xb) - yb))"),
], ids=["step number read", "batch cut"])
def test_a_loop_cutting_its_data_is_no_whole_data_loop(edit):
    result = convert_source(INLINE.replace(*edit).encode(), "fit.py", backend="tf-distribute")
    assert not any(WHOLE in w.message for w in result.warnings)
    assert not result.full_batch


def test_a_layers_own_training_loop_is_no_whole_data_loop():
    """A layer training itself in a method its model's train_step calls (a forward-forward
    network): that loop runs inside fit's step, on a replica already -- never run on the
    replicas again."""
    src = '''import tensorflow as tf


class SelfTraining(tf.keras.layers.Dense):
    def __init__(self, units):
        super().__init__(units)
        self.opt = tf.keras.optimizers.Adam(0.01)

    def local_fit(self, x):
        for i in range(10):
            with tf.GradientTape() as tape:
                loss = tf.reduce_mean(tf.square(self(x)))
            grads = tape.gradient(loss, self.trainable_weights)
            self.opt.apply_gradients(zip(grads, self.trainable_weights))
        return loss


class Net(tf.keras.Model):
    def __init__(self):
        super().__init__()
        self.block = SelfTraining(4)

    def call(self, x):
        return self.block(x)

    def train_step(self, data):
        x, y = data
        return {"loss": self.block.local_fit(x)}


model = Net()
model.compile(optimizer="adam")
x = tf.random.normal([64, 4])
model.fit(x, x, batch_size=16, epochs=1)
'''
    result = convert_source(src.encode(), "ff.py", backend="tf-distribute")
    assert not any(WHOLE in w.message for w in result.warnings)
    assert "run_on_replicas(" not in (result.data or b"").decode()


# --------------------------------------------------------------- under Horovod
@pytest.mark.parametrize("src", [INLINE, HELPER, IN_MAIN, NAMED_RANGE, GRADIENT_HELPER, GRADIENT_HELPER_INLINE],
                         ids=["inline", "helper", "in main()", "named range", "gradient helper",
                              "gradient helper in the apply"])
def test_horovod_keeps_the_steps_and_the_rate_of_a_whole_data_loop(src):
    """Every rank runs every step on all of it; the averaged gradients are the single process's
    (before: half the steps at twice the rate, unwarned, and a local loss function read as a
    stream of batches drawn size times per step)."""
    result = convert_source(src.encode(), "fit.py", backend="horovod")
    assert result.status == "converted", result.error
    text = result.data.decode()
    assert any(WHOLE in w.message for w in result.warnings) and result.full_batch
    assert "learning_rate=0.1)" in text and "range(20)" in text and "_draw" not in text
    assert "DistributedGradientTape(tape)" in text and "broadcast_variables(" in text


STYLE = '''import tensorflow as tf

content = tf.random.stateless_uniform([1, 8, 8, 3], seed=[1, 2])
image = tf.Variable(content)
opt = tf.keras.optimizers.Adam(learning_rate=0.02)


@tf.function
def train_step(image):
    with tf.GradientTape() as tape:
        loss = tf.reduce_mean(tf.square(image - content))
    grad = tape.gradient(loss, image)
    opt.apply_gradients([(grad, image)])
    image.assign(tf.clip_by_value(image, 0.0, 1.0))


step = 0
for n in range(3):
    for m in range(10):
        step += 1
        train_step(image)
    print("Train step: {}".format(step))
'''


@pytest.mark.parametrize("backend", ["horovod", "tf-distribute"])
def test_a_count_kept_before_the_step_leaves_it_on_the_whole_data(backend):
    """Style transfer's shape: the image itself trained, ``step += 1`` before each step (a count
    the step does not read); it was a refusal under tf-distribute ("not an assignment of names
    cutting the batch") and divided steps under Horovod."""
    result = convert_source(STYLE.encode(), "style.py", backend=backend)
    assert result.status == "converted", result.error
    text = result.data.decode()
    assert any(WHOLE in w.message for w in result.warnings) and result.full_batch
    assert "for m in range(10):" in text and "learning_rate=0.02)" in text


@pytest.mark.parametrize("backend", ["horovod", "tf-distribute"])
@pytest.mark.parametrize("edit", [
    ("        train_step(image)\n", "        train_step(image * (1.0 + 0.0 * step))\n"),  # the count read
    ("    with tf.GradientTape() as tape:\n", "    with tf.GradientTape() as tape:\n"
                                            "        image.assign_add(tf.random.normal([1, 8, 8, 3]) * 0.01)\n"),
], ids=["count read by the step", "draw in the step"])
def test_a_step_reading_what_changes_is_no_whole_data_step(backend, edit):
    result = convert_source(STYLE.replace(*edit).encode(), "style.py", backend=backend)
    assert not any(WHOLE in w.message for w in result.warnings)
    assert not result.full_batch


def test_horovod_gives_its_tape_a_list_of_one_variable():
    """DistributedGradientTape.gradient iterates its sources (Horovod 0.28.1): one tf.Variable
    given alone fails at the first step, as broadcast_variables does. Followed through the
    step's parameter to the tf.Variable the loop passes it."""
    result = convert_source(STYLE.encode(), "style.py", backend="horovod")
    text = result.data.decode()
    assert "grad = tape.gradient(loss, [image])[0]\n" in text
    assert "hvd.broadcast_variables([image], root_rank=0)" in text
    model = convert_source(INLINE.encode(), "fit.py", backend="horovod").data.decode()
    assert "tape.gradient(loss, model.trainable_variables)\n" in model  # a list already: as written
