"""Dividing the work along the data flow, and objects followed by binding.

Each case is a small whole script; the assertions name the exact lines the
conversion must (or must not) contain, so a case can only pass when the
decision is the right one.
"""
import textwrap
from pathlib import Path

import pytest

from tfdist.api import convert_source

TF1 = """import numpy as np
import tensorflow as tf

tf.compat.v1.disable_eager_execution()
x = tf.compat.v1.placeholder(tf.float32, [None, 8])
y = tf.compat.v1.placeholder(tf.int64, [None])
loss = tf.compat.v1.losses.sparse_softmax_cross_entropy(y, tf.compat.v1.layers.dense(x, 2))
train_op = tf.compat.v1.train.GradientDescentOptimizer(0.1).minimize(loss)
"""


def convert(src: str):
    result = convert_source(textwrap.dedent(src).encode(), "case.py")
    assert result.status == "converted", (result.error, result.error_line)
    return result


def warnings(result):
    return [w for w in result.warnings if w.level == "WARNING"]


SLICE_DATA = "data = data[hvd.rank()::hvd.size()][:len(data) // hvd.size()]"
SLICE_LABELS = "labels = labels[hvd.rank()::hvd.size()][:len(labels) // hvd.size()]"


def test_labels_derived_from_data_are_sliced_once_with_the_data():
    # The bug of issue 8: slicing data at its assignment sliced the derived
    # labels twice (pairs broken) and quartered n.
    result = convert(TF1 + """
rng = np.random.RandomState(0)
data = rng.rand(1024, 8).astype(np.float32)
labels = (data.sum(axis=1) > 4).astype(np.int64)
n = labels.shape[0]
with tf.compat.v1.Session() as sess:
    sess.run(tf.compat.v1.global_variables_initializer())
    for step in range(2 * n // 32):
        off = (step * 32) % (n - 32)
        sess.run(train_op, feed_dict={x: data[off:off + 32], y: labels[off:off + 32]})
""")
    lines = result.code.splitlines()
    at = lines.index("labels = (data.sum(axis=1) > 4).astype(np.int64)")
    assert lines[at + 1:at + 4] == ["# Horovod: each rank trains on its own equal share of the samples.",
                                    SLICE_DATA, SLICE_LABELS]
    assert result.code.count("data[hvd.rank()::") == 1 and result.code.count("labels[hvd.rank()::") == 1
    # n is computed after the slicing: a per-rank count already, not divided again
    assert "    for step in range(2 * n // 32):" in lines
    assert not warnings(result)


def test_a_count_computed_before_the_slicing_is_divided():
    result = convert(TF1 + """
data = np.random.rand(1024, 8).astype(np.float32)
steps = len(data) // 32
labels = (data[:, 0] > 0.5).astype(np.int64)
with tf.compat.v1.Session() as sess:
    sess.run(tf.compat.v1.global_variables_initializer())
    for step in range(steps):
        idx = np.random.randint(0, len(data), 32)
        sess.run(train_op, feed_dict={x: data[idx], y: labels[idx]})
""")
    assert "    for step in range(max(1, steps // hvd.size())):" in result.code.splitlines()
    assert SLICE_DATA in result.code and SLICE_LABELS in result.code


def test_a_full_size_count_used_for_offsets_is_reported():
    result = convert(TF1 + """
data = np.random.rand(1024, 8).astype(np.float32)
n = len(data)
labels = (data[:, 0] > 0.5).astype(np.int64)
with tf.compat.v1.Session() as sess:
    sess.run(tf.compat.v1.global_variables_initializer())
    for step in range(100):
        off = (step * 32) % (n - 32)
        sess.run(train_op, feed_dict={x: data[off:off + 32], y: labels[off:off + 32]})
""")
    assert any("n (line 11) is computed from the full data" in w.message and w.line == 16
               for w in warnings(result)), result.warnings


def test_a_pure_batch_function_of_the_step_is_not_split_between_ranks():
    # Drawing get_batch(step) size times would give every rank the same batch.
    result = convert(TF1 + """
data = np.random.rand(1024, 8).astype(np.float32)


def get_batch(step):
    lo = (step * 32) % 992
    return data[lo:lo + 32], (data[lo:lo + 32, 0] > 0.5).astype(np.int64)


with tf.compat.v1.Session() as sess:
    sess.run(tf.compat.v1.global_variables_initializer())
    for step in range(100):
        bx, by = get_batch(step)
        sess.run(train_op, feed_dict={x: bx, y: by})
""")
    assert "_draw" not in result.code
    assert any(w.rule == "data-division" and "feed_dict" in w.message for w in warnings(result))


def test_a_stateful_generator_is_split_between_ranks():
    result = convert(TF1 + """
data = np.random.rand(1024, 8).astype(np.float32)


def batches():
    while True:
        for lo in range(0, 1024, 32):
            yield data[lo:lo + 32], (data[lo:lo + 32, 0] > 0.5).astype(np.int64)


stream = batches()
with tf.compat.v1.Session() as sess:
    sess.run(tf.compat.v1.global_variables_initializer())
    for step in range(100):
        bx, by = next(stream)  # one batch
        sess.run(train_op, feed_dict={x: bx, y: by})
""")
    assert textwrap.dedent("""\
        for _draw in range(hvd.size()):
            _batch = next(stream)  # one batch
            if _draw == hvd.rank():
                bx, by = _batch""") in textwrap.dedent("\n".join(
        line[8:] for line in result.code.splitlines() if line.startswith("        ")))
    assert "for step in range(max(1, 100 // hvd.size())):" in result.code
    assert not warnings(result)


def test_a_shadowed_range_is_not_the_built_in():
    result = convert(TF1 + """
def range(n):
    return [0] * n


data = np.random.rand(64, 8).astype(np.float32)
labels = (data[:, 0] > 0.5).astype(np.int64)
with tf.compat.v1.Session() as sess:
    sess.run(tf.compat.v1.global_variables_initializer())
    for step in range(100):
        sess.run(train_op, feed_dict={x: data[:32], y: labels[:32]})
""")
    assert "    for step in range(100):" in result.code.splitlines()
    assert any("cannot see how many steps" in w.message for w in warnings(result))


TAPE_CLASSES = """import numpy as np
import tensorflow as tf


class Trainer:
    def __init__(self, model, lr):
        self.model, self.opt = model, tf.keras.optimizers.Adam(lr)

    def step(self, x):
        with tf.GradientTape() as tape:
            loss = tf.reduce_mean(self.model(x))
        grads = tape.gradient(loss, self.model.trainable_variables)
        self.opt.apply_gradients(zip(grads, self.model.trainable_variables))


class Critic:
    def __init__(self, model):
        self.model, self.opt = model, tf.keras.optimizers.SGD(0.1)

    def step(self, x):
        with tf.GradientTape() as tape:
            loss = -tf.reduce_mean(self.model(x))
        grads = tape.gradient(loss, self.model.trainable_variables)
        self.opt.apply_gradients(zip(grads, self.model.trainable_variables))


data = tf.data.Dataset.from_tensor_slices(np.zeros((64, 4), "float32")).batch(8)
trainer = Trainer(tf.keras.Sequential([tf.keras.layers.Dense(1)]), 0.001)
critic = Critic(tf.keras.Sequential([tf.keras.layers.Dense(1)]))
for x in data:
    trainer.step(x)
    critic.step(x)
"""


def test_two_classes_with_the_same_attribute_names_are_two_optimizers():
    result = convert(TAPE_CLASSES)
    code = result.code
    assert "self.model, self.opt = model, tf.keras.optimizers.Adam(lr * hvd.size())" in code
    assert "self.model, self.opt = model, tf.keras.optimizers.SGD(0.1 * hvd.size())" in code
    # each class broadcasts its own model and optimizer after its first step
    assert code.count("if self.opt.iterations == 1:") == 2
    assert code.count("hvd.broadcast_variables(self.model.variables, root_rank=0)") == 2
    # the loop that trains through the methods reads a dataset: it is sharded
    assert "from_tensor_slices(np.zeros((64, 4), \"float32\")).apply(lambda ds: ds.shard(" in code
    assert not warnings(result), result.warnings


def test_one_optimizer_applied_at_two_sites_on_the_same_model_broadcasts_after_each():
    src = TAPE_CLASSES.replace("        self.opt.apply_gradients(zip(grads, self.model.trainable_variables))\n\n\nclass Critic",
                               "        self.opt.apply_gradients(zip(grads, self.model.trainable_variables))\n"
                               "        self.opt.apply_gradients(zip(grads, self.model.trainable_variables))\n\n\nclass Critic")
    result = convert(src)
    # iterations == 1 holds right after exactly one of the sites: one broadcast
    assert result.code.count("if self.opt.iterations == 1:") == 3
    assert not warnings(result), result.warnings


ONE_OPTIMIZER_TWO_MODELS = """import numpy as np
import tensorflow as tf

gen = tf.keras.Sequential([tf.keras.layers.Dense(4)])
disc = tf.keras.Sequential([tf.keras.layers.Dense(1)])
opt = tf.keras.optimizers.Adam(1e-3)
data = tf.data.Dataset.from_tensor_slices(np.zeros((64, 4), "float32")).batch(8)
for i, x in enumerate(data):
    with tf.GradientTape() as tape:
        g_loss = tf.reduce_mean(disc(gen(x)))
    grads = tape.gradient(g_loss, gen.trainable_variables)
    opt.apply_gradients(zip(grads, gen.trainable_variables))
    with tf.GradientTape() as tape2:
        d_loss = tf.reduce_mean(disc(x))
    grads2 = tape2.gradient(d_loss, disc.trainable_variables)
    opt.apply_gradients(zip(grads2, disc.trainable_variables))
"""


def test_one_optimizer_applied_to_two_models_in_turn_broadcasts_each_after_its_first_apply():
    # each pass applies the optimizer twice, in order: the generator's
    # variables go after its apply (count 1), the discriminator's after the
    # second (count 2), with the optimizer's state
    result = convert(ONE_OPTIMIZER_TWO_MODELS)
    lines = result.code.splitlines()
    first = lines.index("    opt.apply_gradients(zip(grads, gen.trainable_variables))")
    assert lines[first + 2:first + 5] == ["    if opt.iterations == 1:",
                                          "        hvd.broadcast_variables(gen.variables, root_rank=0)",
                                          "        hvd.broadcast_variables(opt.variables, root_rank=0)"]
    second = lines.index("    opt.apply_gradients(zip(grads2, disc.trainable_variables))")
    assert lines[second + 2:second + 5] == ["    if opt.iterations == 2:",
                                            "        hvd.broadcast_variables(disc.variables, root_rank=0)",
                                            "        hvd.broadcast_variables(opt.variables, root_rank=0)"]
    assert not [w for w in warnings(result) if w.rule == "gradient-tape"], result.warnings


def test_one_optimizer_applied_to_different_models_not_once_each_per_pass_is_reported_with_both_lines():
    # the second apply runs on some passes only: the count after the first
    # pass is not known, so the generator's broadcast cannot be placed
    result = convert(ONE_OPTIMIZER_TWO_MODELS.replace(
        "    opt.apply_gradients(zip(grads2, disc.trainable_variables))",
        "    if i % 2:\n        opt.apply_gradients(zip(grads2, disc.trainable_variables))"))
    assert any(w.rule == "gradient-tape" and "lines 12, 17" in w.message and "different variables" in w.message
               for w in warnings(result)), result.warnings


def test_full_batch_training_divides_the_data_once_and_keeps_steps_and_rate():
    # Every step trains on the whole data set: each rank gets an equal share
    # of it; the steps are not divided too (that would divide the work
    # twice) and the global batch is unchanged, so the rate is not scaled.
    result = convert(TF1 + """
x_data = [[1.0] * 8, [2.0] * 8, [3.0] * 8, [4.0] * 8]
y_data = [0, 1, 0, 1]
with tf.compat.v1.Session() as sess:
    sess.run(tf.compat.v1.global_variables_initializer())
    for step in range(2001):
        sess.run(train_op, feed_dict={x: x_data, y: y_data})
""")
    code = result.code
    assert "x_data = x_data[hvd.rank()::hvd.size()][:len(x_data) // hvd.size()]" in code
    assert "y_data = y_data[hvd.rank()::hvd.size()][:len(y_data) // hvd.size()]" in code
    assert "    for step in range(2001):" in code.splitlines()
    assert "hvd.DistributedOptimizer(tf.compat.v1.train.GradientDescentOptimizer(0.1))" in code
    assert any(c.rule == "lr-scaling" and "learning rate kept" in c.message for c in result.changes)
    assert not warnings(result), result.warnings


def test_constant_arrays_and_noise_next_to_a_sampler_are_not_data():
    result = convert(TF1 + """
from tensorflow.examples.tutorials.mnist import input_data

mnist = input_data.read_data_sets("/tmp/mnist")
z = tf.compat.v1.placeholder(tf.float32, [None, 4])
target = tf.compat.v1.placeholder(tf.float32, [None])
with tf.compat.v1.Session() as sess:
    sess.run(tf.compat.v1.global_variables_initializer())
    for step in range(100):
        bx, by = mnist.train.next_batch(32)
        bx = np.reshape(bx, newshape=[-1, 8])
        noise = np.random.uniform(-1.0, 1.0, size=[32, 4])
        ones = np.concatenate([np.ones([32]), np.zeros([32])], axis=0)
        sess.run(train_op, feed_dict={x: bx, y: by, z: noise, target: ones})
""")
    assert "np.random.seed(np.random.randint(2 ** 31 - 1) + hvd.rank())" in result.code
    assert "for step in range(max(1, 100 // hvd.size())):" in result.code
    assert not warnings(result), result.warnings


KERAS_TWO_OUTPUTS = """import numpy as np
import tensorflow as tf

X = np.load("x.npy")
Y = np.load("y.npy")
inputs = tf.keras.Input((8,))
model = tf.keras.Model(inputs, [tf.keras.layers.Dense(2)(inputs), tf.keras.layers.Dense(2)(inputs)])
model.compile(optimizer=tf.keras.optimizers.SGD(0.1), loss="mse")
"""
EACH_ARRAY = "[rows[hvd.rank()::hvd.size()][:len(rows) // hvd.size()] for rows in {}]"


def _fit_line(result):
    return next(line for line in result.data.decode().splitlines() if ".fit(" in line)


def test_a_list_of_outputs_given_to_fit_is_sliced_array_by_array():
    # Keras reads a list given to fit() as one array per output (a list of
    # samples fails its cardinality check): slicing the list itself would drop
    # outputs. list(Y.swapaxes(0, 1)), a comprehension over the steps and a
    # display of names are all lists of arrays.
    for bind, name in (("outputs = list(Y.swapaxes(0, 1))\n", "outputs"),
                       ("outputs = [Y[:, t] for t in range(2)]\n", "outputs"),
                       ("", "list(Y.swapaxes(0, 1))")):
        result = convert(KERAS_TWO_OUTPUTS + bind + f"model.fit(X, {name}, epochs=1)\n")
        assert not warnings(result), [w.message for w in warnings(result)]
        assert EACH_ARRAY.format(name) in _fit_line(result), _fit_line(result)
        assert f"{name}[hvd.rank()::hvd.size()]" not in _fit_line(result)


def test_a_list_converted_to_an_array_is_sliced_as_samples():
    # np.array(rows) given to fit: the rows of the list are samples, whatever it holds
    result = convert(KERAS_TWO_OUTPUTS.replace("[tf.keras.layers.Dense(2)(inputs), tf.keras.layers.Dense(2)(inputs)]",
                                               "tf.keras.layers.Dense(2)(inputs)")
                     + "rows = [list(r) for r in X]\nmodel.fit(np.array(rows), Y, epochs=1)\n")
    assert "np.array(rows[hvd.rank()::hvd.size()][:len(rows) // hvd.size()])" in _fit_line(result)


def test_a_name_bound_to_a_list_of_outputs_and_to_an_array_is_reported():
    result = convert(KERAS_TWO_OUTPUTS + "if X.ndim > 1:\n    outputs = list(Y)\nelse:\n    outputs = Y\n"
                     "model.fit(X, outputs, epochs=1)\n")
    (warning,) = warnings(result)
    assert "outputs is bound both to a list or dict of arrays" in warning.message
    assert "hvd.rank()::" not in _fit_line(result)  # nothing sliced: X and outputs are kept paired


def test_an_array_reshaped_where_fit_is_called_is_sliced_whole():
    # x.reshape(-1, 1) may merge or split rows, but what fit() is handed has
    # its samples along the first axis (paired row for row with y): that
    # result is sliced, computed once
    result = convert(KERAS_TWO_OUTPUTS.replace("[tf.keras.layers.Dense(2)(inputs), tf.keras.layers.Dense(2)(inputs)]",
                                               "tf.keras.layers.Dense(2)(inputs)")
                     + "model.fit(X.reshape(-1, 8), Y, epochs=1)\n")
    assert not warnings(result)
    assert ("(lambda rows: rows[hvd.rank()::hvd.size()][:len(rows) // hvd.size()])(X.reshape(-1, 8))"
            in _fit_line(result)), _fit_line(result)


TAPE_STEP = """import numpy as np
import tensorflow as tf

x = np.load("x.npy")
y = np.load("y.npy")
model = tf.keras.Sequential([tf.keras.layers.Dense(1)])
opt = tf.keras.optimizers.SGD(0.1)


def step(xb, yb):
    with tf.GradientTape() as tape:
        loss = tf.reduce_mean((model(xb) - yb) ** 2)
    grads = tape.gradient(loss, model.trainable_variables)
    opt.apply_gradients(zip(grads, model.trainable_variables))
    return loss
"""


def test_a_tape_step_run_once_outside_any_loop_is_warned():
    # Horovod: every rank would take the one step on the same data at N x the
    # rate, with the initial state broadcast only after it: the result differs
    # from the original's and nothing says so
    (warning,) = warnings(convert(TAPE_STEP + "print(float(step(x, y)))\n"))
    assert "this step runs once, outside any loop" in warning.message and warning.line == 14
    looped = convert(TAPE_STEP + "for i in range(0, len(x), 32):\n    step(x[i:i + 32], y[i:i + 32])\n")
    assert not [w for w in warnings(looped) if "outside any loop" in w.message]


def test_optimizers_chosen_by_a_loop_over_pairs_written_out_are_each_scaled():
    # for layers, optimizer in ((lower, opt_a), (upper, opt_b)): optimizer is
    # followed to both constructions; scaling only one would train the other
    # group at the single-process rate, silently
    from pathlib import Path
    source = (Path(__file__).parent / "fixtures/gradient_tape/optimizer_per_layer_group_pairs/input.py").read_text()
    result = convert(source)
    assert not warnings(result)
    assert "SGD(learning_rate=0.05 * hvd.size())" in result.code
    assert "Nadam(learning_rate=0.01 * hvd.size())" in result.code
    assert "for step in range(1, max(1, n_steps // hvd.size()) + 1):" in result.code  # the pairs loop is not a step loop



def test_a_second_loop_reading_an_array_also_bound_again_does_not_slice_it_twice():
    # Two training loops read y; the second's y may be the one the first loop
    # had sliced (after its binding) or a rebinding in a block between them.
    # Slicing again after that block would divide the first y twice (its
    # rows no longer paired with data's): warned instead.
    result = convert(TF1 + """
TRAIN_AGAIN = True
rng = np.random.RandomState(0)
data = rng.rand(1024, 8).astype(np.float32)
labels = (data.sum(axis=1) > 4).astype(np.int64)
with tf.compat.v1.Session() as sess:
    sess.run(tf.compat.v1.global_variables_initializer())
    for i in range(len(data) // 32):
        sess.run(train_op, feed_dict={x: data[i * 32:(i + 1) * 32], y: labels[i * 32:(i + 1) * 32]})
    if TRAIN_AGAIN:
        labels = rng.randint(0, 2, size=(1024,))
    for i in range(len(data) // 32):
        sess.run(train_op, feed_dict={x: data[i * 32:(i + 1) * 32], y: labels[i * 32:(i + 1) * 32]})
""")
    assert result.code.count("labels[hvd.rank()::") <= 1, result.code
    assert any(w.rule == "data-division" for w in warnings(result))


TAPE_LOOP = """
    for i in range(len(data) // 32):
        xb, yb = data[i * 32:(i + 1) * 32], labels[i * 32:(i + 1) * 32]
        with tf.GradientTape() as tape:
            loss = loss_fn(yb, model(xb))
        grads = tape.gradient(loss, model.trainable_variables)
        optimizer.apply_gradients(zip(grads, model.trainable_variables))
"""


def test_tape_loops_reading_an_array_rebound_between_them_do_not_slice_it_twice():
    # the GradientTape form of the case above: the first loop's arrays are
    # sliced where final; the second reads labels through that binding and a
    # rebinding in a block between the loops: warned, never sliced twice
    result = convert(textwrap.dedent("""
        import numpy as np
        import tensorflow as tf

        RELABEL = True
        data = np.random.rand(1024, 8).astype("float32")
        labels = (data.sum(axis=1) > 4).astype("int64")
        model = tf.keras.Sequential([tf.keras.layers.Dense(2)])
        optimizer = tf.keras.optimizers.SGD(0.1)
        loss_fn = tf.keras.losses.SparseCategoricalCrossentropy(from_logits=True)
        for epoch in range(2):""") + TAPE_LOOP + "if RELABEL:\n    labels = np.random.randint(0, 2, size=(1024,))\n"
        + "for epoch in range(2):" + TAPE_LOOP)
    assert result.code.count("labels = labels[hvd.rank()::") == 1, result.code
    assert any("labels" in w.message and w.rule == "data-division" for w in warnings(result))


def test_rows_rescaled_under_the_same_name_and_conditions_made_from_label_rows_are_sliced_with_them():
    # xb = x[...]; xb = xb / 127.5 - 1.0; xb = xb.astype(...): still x's rows;
    # cond = np.eye(4)[yb]: computed from the label rows, made from each rank's share
    result = convert_source(textwrap.dedent("""
        import numpy as np
        import tensorflow as tf

        x = np.random.rand(480, 8)
        labels = np.random.randint(0, 4, size=(480,))
        model = tf.keras.Sequential([tf.keras.layers.Dense(4)])
        optimizer = tf.keras.optimizers.SGD(0.05)
        loss_fn = tf.keras.losses.SparseCategoricalCrossentropy(from_logits=True)
        for i in range(len(x) // 24):
            xb = x[i * 24:(i + 1) * 24]
            xb = xb / 127.5 - 1.0
            xb = xb.astype("float32")
            yb = labels[i * 24:(i + 1) * 24]
            cond = np.eye(4, dtype="float32")[yb]
            with tf.GradientTape() as tape:
                loss = loss_fn(yb, model(tf.concat([xb, cond], axis=1)))
            grads = tape.gradient(loss, model.trainable_variables)
            optimizer.apply_gradients(zip(grads, model.trainable_variables))
        """).encode(), "case.py")
    assert result.status == "converted", result.error
    lines = result.code.splitlines()
    at = lines.index("labels = np.random.randint(0, 4, size=(480,))")
    assert lines[at + 2:at + 4] == ["x = x[hvd.rank()::hvd.size()][:len(x) // hvd.size()]",
                                    "labels = labels[hvd.rank()::hvd.size()][:len(labels) // hvd.size()]"]
    assert not [w for w in result.warnings if w.rule == "data-division"], [w.message for w in result.warnings]


LANGEVIN = """import numpy as np
import tensorflow as tf

model = tf.keras.Sequential([tf.keras.layers.Dense(1)])
optimizer = tf.keras.optimizers.Adam(1e-3)
data = tf.data.Dataset.from_tensor_slices(np.zeros((64, 4), "float32")).batch(8)


def sample(imgs, steps):
    for _ in range(steps):
        with tf.GradientTape() as tape:
            tape.watch(imgs)
            score = model(imgs)
        grads = tape.gradient(score, imgs)
        imgs = imgs + 0.1 * grads
    return imgs


for x in data:
    fake = sample(tf.random.normal(x.shape), 5)
    with tf.GradientTape() as tape:
        loss = tf.reduce_mean(model(fake)) - tf.reduce_mean(model(x))
    grads = tape.gradient(loss, model.trainable_variables)
    optimizer.apply_gradients(zip(grads, model.trainable_variables))
"""


def test_a_samplers_gradient_with_respect_to_its_inputs_is_not_the_training_gradient_of_the_same_name():
    # sample()'s grads and the loop's grads share a name, not a variable: only
    # the loop's tape is averaged (the sampler's would average each rank's
    # input gradients, and under tf.distribute be divided by the replicas)
    result = convert(LANGEVIN)
    assert result.code.count("hvd.DistributedGradientTape(tape)") == 1, result.code
    lines = result.code.splitlines()
    assert lines[lines.index("        grads = tape.gradient(score, imgs)") - 1] == "            score = model(imgs)"
    tfd = convert_source(LANGEVIN.encode(), "ebm.py", backend="tf-distribute")
    assert tfd.status == "converted", tfd.error
    assert "tape.gradient(score, imgs)" in tfd.data.decode()
    assert tfd.data.decode().count("/ strategy.num_replicas_in_sync") == 1


@pytest.mark.parametrize("shape", [
    # a helper returning the loss and the gradients
    """def loss_and_grads(x):
    with tf.GradientTape() as tape:
        loss = tf.reduce_mean(model(x))
    grads = tape.gradient(loss, model.trainable_variables)
    return loss, grads


for x in data:
    loss, g = loss_and_grads(x)
    optimizer.apply_gradients(zip(g, model.trainable_variables))
""",
    # gradients collected in a list, then averaged by a helper
    """def backprop(x):
    with tf.GradientTape() as tape:
        loss = tf.reduce_mean(model(x))
    return tape.gradient(loss, model.trainable_variables)


def average(tower_grads):
    return [tf.reduce_mean(tf.stack(gs), axis=0) for gs in zip(*tower_grads)]


for x in data:
    tower_grads = []
    for half in (x[:4], x[4:]):
        tower_grads.append(backprop(half))
    optimizer.apply_gradients(zip(average(tower_grads), model.trainable_variables))
""",
    # handed to a function applying them (a notebook redefines it: the last definition runs)
    """def update(gradients, variables):
    for g, v in zip(gradients, variables):
        v.assign_sub(0.1 * g)


def update(gradients, variables):
    optimizer.apply_gradients(zip(gradients, variables))


for x in data:
    with tf.GradientTape() as tape:
        loss = tf.reduce_mean(model(x))
    update(tape.gradient(loss, model.trainable_variables), model.trainable_variables)
""",
], ids=["helper_returns", "list_appended", "parameter"])
def test_gradients_reach_the_optimizer_through_helpers_lists_and_parameters(shape):
    src = """import numpy as np
import tensorflow as tf

model = tf.keras.Sequential([tf.keras.layers.Dense(1)])
optimizer = tf.keras.optimizers.SGD(0.1)
data = tf.data.Dataset.from_tensor_slices(np.zeros((64, 4), "float32")).batch(8)


""" + shape
    result = convert(src)
    assert result.code.count("hvd.DistributedGradientTape(tape)") == 1, result.code
    assert not [w for w in warnings(result) if "by hand" in w.message], result.warnings


ROWS_FROM_LISTED_FILES = '''import tensorflow as tf

files = tf.data.Dataset.list_files("data/*.txt")
rows = []
for path in iter(files):
    rows.append(tf.strings.to_number(tf.strings.split(tf.io.read_file(path), ",")))
rows = tf.stack(rows, axis=0)
dataset = tf.data.Dataset.from_tensor_slices(rows).batch(16)
model = tf.keras.Sequential([tf.keras.layers.Dense(1)])
model.compile(optimizer="sgd", loss="mse")
model.fit(dataset.map(lambda r: (r, r[:1])), epochs=2)
'''


@pytest.mark.parametrize("backend", ["horovod", "tf-distribute"])
def test_rows_read_in_the_order_list_files_shuffles_get_one_seed(backend):
    """The rows handed to from_tensor_slices were read in list_files' order,
    which it shuffles with a random seed of each process: the source divided
    is the rows, but the seed that makes their order the same on every rank
    is list_files'. Runtime: correctness_scripts/tape_rows_read_from_listed_files.py."""
    result = convert_source(ROWS_FROM_LISTED_FILES, "rows.py", backend=backend)
    assert result.status == "converted", result.error
    assert 'files = tf.data.Dataset.list_files("data/*.txt", seed=1234)' in result.code, result.code


_CAPPED_STREAM = (Path(__file__).parent / "fixtures" / "gradient_tape" / "generator_stream_step_cap"
                  / "input.py").read_text()


def test_a_capped_stream_whose_number_is_only_logged_is_renumbered_per_rank():
    """``for step, (x, y) in enumerate(stream)`` breaking at a count: the
    share is numbered on each rank and the count divided, also when the
    number is logged (a summary's step=): every rank breaks after the same
    number of steps."""
    source = _CAPPED_STREAM.replace(
        "        if step >= STEPS_PER_EPOCH:",
        "        with writer.as_default():\n            tf.summary.scalar(\"loss\", loss, step=step)\n"
        "        if step >= STEPS_PER_EPOCH:").replace("loss_fn = tf.keras", "writer = tf.summary.create_file_writer(\"logs\")\nloss_fn = tf.keras")
    result = convert_source(source, "capped.py")
    assert result.status == "converted", result.error
    assert "enumerate(rank_share(batches(images, labels, 32)), start=1)" in result.code, result.code
    assert "if step >= max(1, STEPS_PER_EPOCH // hvd.size()):" in result.code, result.code
    assert not [w for w in result.warnings if w.rule == "data-division"], result.warnings


def test_a_capped_stream_whose_number_is_data_is_warned_not_renumbered():
    """The number also computes the loss (decay(step)): renumbering it per
    rank would change training, and the stream's own numbers differ from
    rank to rank (the ranks would break after different numbers of steps):
    warned with the edit, the loop left as it is."""
    source = _CAPPED_STREAM.replace(
        "            loss = loss_fn(y, model(x, training=True))",
        "            loss = loss_fn(y, model(x, training=True)) * decay(step)").replace(
        "STEPS_PER_EPOCH = 50\n", "STEPS_PER_EPOCH = 50\n\n\ndef decay(step):\n    return 0.99 ** step\n")
    result = convert_source(source, "capped.py")
    assert "rank_share" not in result.code
    assert [w for w in result.warnings if "uses the number step as data" in w.message], result.warnings


def test_a_table_of_settings_picked_by_the_step_number_is_not_sliced():
    """``SCALES = [1.0, 0.5, 0.25]`` read as ``SCALES[step % 3]`` in the
    step: literal settings, not rows of data (sliced by rank, rank 1 held
    one of them and ``SCALES[2]`` failed); the data is divided elsewhere."""
    source = _CAPPED_STREAM.replace("STEPS_PER_EPOCH = 50\n", "STEPS_PER_EPOCH = 50\nSCALES = [1.0, 0.5, 0.25]\n").replace(
        "        with tf.GradientTape() as tape:\n            loss = loss_fn(y, model(x, training=True))",
        "        scale = SCALES[step % 3]\n        with tf.GradientTape() as tape:\n"
        "            loss = scale * loss_fn(y, model(x, training=True))")
    result = convert_source(source, "scaled.py")
    assert "SCALES = [1.0, 0.5, 0.25]\n" in result.code
    assert not [c for c in result.changes if "SCALES" in c.message], [c.message for c in result.changes]


FULL_BATCH = """import tensorflow as tf

class Model(object):
    def __init__(self):
        self.W = tf.Variable(10.0)
        self.b = tf.Variable(-5.0)

    def __call__(self, inputs):
        return self.W * inputs + self.b

def compute_loss(y_true, y_pred):
    return tf.reduce_mean(tf.square(y_true - y_pred))

model = Model()
inputs = tf.random.normal(shape=[1000])
outputs = inputs * 3.0 + 2.0
optimizer = tf.keras.optimizers.SGD(0.1)
for epoch in range(30):
    with tf.GradientTape() as tape:
        loss = compute_loss(outputs, model(inputs))
    grads = tape.gradient(loss, [model.W, model.b])
    optimizer.apply_gradients(zip(grads, [model.W, model.b]))
"""


def test_a_pure_function_of_unchanging_arguments_is_no_stream_of_batches():
    """``compute_loss(outputs, model(inputs))`` returns the same value for the
    same model at every step: drawing it size times per step and keeping one
    (as for a sampler walking its data in order) computes the whole loss size
    times over for nothing (seen on TensorFlow2.0-Examples' linear regression)."""
    result = convert(FULL_BATCH)
    assert result.status == "converted", result.error
    assert "_draw" not in result.code and "loss = compute_loss(outputs, model(inputs))" in result.code


@pytest.mark.parametrize("reads", ["np.random.randint(0, 1000, 32)", "tf.random.uniform([32], 0, 1000, tf.int32)",
                                   "cursor"])
def test_a_function_drawing_or_reading_what_the_loop_changes_is_still_a_stream(reads):
    """The same shape, but the helper draws its rows at random or reads a
    cursor the loop moves: a stream of batches, split between the ranks."""
    src = FULL_BATCH.replace(
        "def compute_loss(y_true, y_pred):\n    return tf.reduce_mean(tf.square(y_true - y_pred))",
        "def compute_loss(y_true, y_pred):\n    rows = " + reads + "\n"
        "    return tf.reduce_mean(tf.square(tf.gather(y_true, rows) - tf.gather(y_pred, rows)))")
    src = "import numpy as np\n" + src.replace("for epoch in range(30):\n",
                                              "cursor = 0\nfor epoch in range(30):\n    cursor = cursor + 32\n")
    result = convert(src)
    assert result.status == "converted", result.error
    assert "_draw" in result.code or "np.random.seed(" in result.code, result.code
