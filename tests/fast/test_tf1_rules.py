"""TF1 Session / MonitoredSession behaviour the whole-script fixtures cannot
show: warnings, pattern detection, refusals without a line."""
from pathlib import Path

from tfdist.api import convert_source

FIXTURES = Path(__file__).parent / "fixtures"


def _convert(text: str):
    return convert_source(text, "script.py")


def _fixture(path: str):
    p = FIXTURES / path / "input.py"
    return convert_source(p.read_bytes(), str(p))


def test_arrays_fed_through_feed_dict_are_sharded_where_they_are_bound():
    result = _fixture("session/feed_dict_placeholders")
    assert result.status == "converted"
    assert not [w for w in result.warnings if w.rule == "data-division"]
    # The batch count follows the (now sharded) arrays: the loop is not divided again.
    assert "for i in range(num_batches):" in result.code
    shard = [c for c in result.changes if c.rule == "data-division"]
    assert [c.line for c in shard] == [19]  # x_train, y_train = load_data()


def test_fixed_step_count_is_divided_even_when_fed_arrays_are_sharded():
    result = _fixture("session/feed_dict_random_batches")
    assert "for step in range(max(1, TRAIN_STEPS // hvd.size())):" in result.code
    assert "train_images = train_images[hvd.rank()::hvd.size()]" in result.code


def test_per_step_feed_values_cannot_be_sharded_and_say_so():
    src = TF1_HEAD + """x = tf.placeholder(tf.float32, [None])
train_op = tf.train.GradientDescentOptimizer(0.1).minimize(loss + tf.reduce_sum(x))
with tf.Session() as sess:
    sess.run(tf.global_variables_initializer())
    for step in range(100):
        batch = load_batch(step)
        sess.run(train_op, feed_dict={x: batch})
"""
    result = _convert(src)
    assert result.status == "converted"
    assert "range(max(1, 100 // hvd.size()))" in result.code
    warn = [w for w in result.warnings if "feed_dict" in w.message]
    assert len(warn) == 1 and warn[0].line == 12
    assert "hvd.rank()" in warn[0].message


def test_operation_run_with_feed_dict_is_a_training_loop():
    result = _fixture("session/interactive_session")
    assert any(c.rule == "data-division" and c.line == 28 for c in result.changes)
    # next_batch() draws from NumPy's global generator: one stream per rank, no warning
    assert any(c.rule == "data-division" and c.line == 29 and "different stream" in c.message for c in result.changes)
    assert not [w for w in result.warnings if w.rule == "data-division"]


MNIST_HEAD = """import numpy as np
import tensorflow as tf
from tensorflow.examples.tutorials.mnist import input_data

mnist = input_data.read_data_sets("/tmp/data", one_hot=True)
X_all, Y_all = mnist.train.images, mnist.train.labels
x = tf.placeholder(tf.float32, [None, 784])
y = tf.placeholder(tf.float32, [None, 10])
lr = tf.placeholder(tf.float32)
w = tf.Variable(tf.zeros([784, 10]))
loss = tf.reduce_mean(tf.square(tf.matmul(x, w) - y))
train_op = tf.train.AdamOptimizer(lr).minimize(loss)
sess = tf.Session()
sess.run(tf.global_variables_initializer())
"""


def test_values_computed_from_drawn_batches_are_drawn_but_step_offsets_are_not():
    # fixtures session/sampled_batch_transforms and fed_learning_rate_schedule
    # show the drawn side; here what must still be warned: a batch read at an
    # offset set by the step counter is not a draw, even when it is mixed with one
    offset = MNIST_HEAD + """for i in range(500):
    bx, by = mnist.train.next_batch(32)
    xs = np.concatenate([bx, X_all[i * 32:(i + 1) * 32]])
    ys = np.concatenate([by, Y_all[i * 32:(i + 1) * 32]])
    sess.run(train_op, feed_dict={x: xs, y: ys, lr: 0.01})
"""
    result = _convert(offset)
    assert [w for w in result.warnings if "feed_dict" in w.message and w.line == 19], result.warnings
    assert "np.random.seed" not in result.code
    # rows at an offset of the step counter read through a method (a sparse
    # matrix's .toarray()) are no stream either: drawing them size times per
    # step would hand every rank the same rows
    method_rows = MNIST_HEAD + """for i in range(500):
    xs = X_all[i * 32:(i + 1) * 32].toarray()
    ys = Y_all[i * 32:(i + 1) * 32].toarray()
    sess.run(train_op, feed_dict={x: xs, y: ys, lr: 0.01})
"""
    result = _convert(method_rows)
    assert "for _draw in range(hvd.size())" not in result.code
    # toarray() keeps the rows (apis.ROW_PRESERVING_METHODS): the arrays are sliced by rank instead
    assert "X_all = X_all[hvd.rank()::hvd.size()]" in result.code, result.code
    assert not [w for w in result.warnings if w.rule == "data-division"], result.warnings
    # a rate made by an object tfdist cannot see from a counter the loop
    # advances with another unseen call: neither is a stream of batches (the
    # counter call must not be run size times per step)
    unseen_rate = MNIST_HEAD + """for i in range(500):
    bx, by = mnist.train.next_batch(32)
    count = counter.increase()
    rate = control.get_value(iteration=count)
    sess.run(train_op, feed_dict={x: bx, y: by, lr: rate})
"""
    result = _convert(unseen_rate)
    assert "for _draw in range(hvd.size())" not in result.code
    assert [w for w in result.warnings if "feed_dict" in w.message], result.warnings
    # a "learning rate" read from the data at each step is no schedule
    data_rate = MNIST_HEAD + """for i in range(500):
    bx, by = mnist.train.next_batch(32)
    rate = float(np.mean(X_all[i]))
    sess.run(train_op, feed_dict={x: bx, y: by, lr: rate})
"""
    result = _convert(data_rate)
    assert [w for w in result.warnings if "feed_dict" in w.message], result.warnings
    # the same with a decay of the step counter: drawn, divided, no warning
    decay = MNIST_HEAD + """import math
for i in range(500):
    bx, by = mnist.train.next_batch(32)
    rate = 0.0001 + 0.003 * math.exp(-i / 2000)
    sess.run(train_op, feed_dict={x: bx + 0.1 * np.random.randn(32, 784), y: by, lr: rate})
"""
    result = _convert(decay)
    assert not [w for w in result.warnings if w.rule == "data-division"], result.warnings
    assert "np.random.seed(np.random.randint(2 ** 31 - 1) + hvd.rank())" in result.code
    assert "range(max(1, 500 // hvd.size()))" in result.code


def test_sharded_tf_data_needs_no_data_warning():
    for case in ("session/optimizer_variable", "session/initializable_iterator",
                 "monitored_session/hooks_list_literal"):
        result = _fixture(case)
        assert not [w for w in result.warnings if w.rule == "data-division"], (case, result.warnings)


def test_epoch_loop_around_a_data_driven_while_loop_is_not_divided():
    result = _fixture("session/initializable_iterator")
    assert "for epoch in range(N_EPOCHS):" in result.code


TF1_HEAD = """import tensorflow.compat.v1 as tf

tf.disable_v2_behavior()
w = tf.Variable(1.0)
loss = tf.square(w - 2.0)
"""


def test_eval_only_tf1_scripts_are_not_training():
    # fixtures/noop/tf1_eval_only and tf1_monitored_eval_only: nothing written.
    for case in ("noop/tf1_eval_only", "noop/tf1_monitored_eval_only"):
        result = _fixture(case)
        assert result.pattern == "Unknown", case
        assert result.no_training and result.data is None, case


def test_evaluation_session_next_to_monitored_training_is_pinned_and_flagged():
    src = TF1_HEAD + """train_op = tf.train.AdamOptimizer(0.1).minimize(loss, global_step=tf.train.get_or_create_global_step())
with tf.train.MonitoredTrainingSession(hooks=[tf.train.StopAtStepHook(last_step=10)]) as sess:
    while not sess.should_stop():
        sess.run(train_op)
with tf.Session() as sess:
    sess.run(tf.global_variables_initializer())
    value = sess.run(loss)
"""
    result = _convert(src)
    assert result.status == "converted", result.error
    assert result.pattern == "MonitoredSession"
    assert "with tf.Session(config=tf.ConfigProto(gpu_options=tf.GPUOptions(visible_device_list=str(hvd.local_rank())))) as sess:" in result.code
    assert any("only rank 0 writes checkpoints" in w.message for w in result.warnings)
    assert "broadcast_global_variables" not in result.code


def test_while_loop_with_its_own_counter_is_divided():
    src = TF1_HEAD + """train_op = tf.train.GradientDescentOptimizer(0.1).minimize(loss)
sess = tf.Session()
sess.run(tf.global_variables_initializer())
step = 0
while step < 100:
    sess.run(train_op)
    step += 1
"""
    result = _convert(src)
    assert result.status == "converted"
    assert "while step < max(1, 100 // hvd.size()):" in result.code
    assert not [w for w in result.warnings if w.line == 10]


def test_while_loop_advancing_by_a_fixed_amount_is_divided():
    # 50 steps of 2: the steps are the bound over the increment, so dividing
    # the bound divides them
    src = TF1_HEAD + """train_op = tf.train.GradientDescentOptimizer(0.1).minimize(loss)
sess = tf.Session()
sess.run(tf.global_variables_initializer())
step = 0
while step < 100:
    sess.run(train_op)
    step += 2
"""
    result = _convert(src)
    assert result.status == "converted"
    assert "while step < max(1, 100 // hvd.size()):" in result.code
    assert not any("cannot see how many steps" in w.message for w in result.warnings)


def test_while_loop_whose_counter_grows_by_a_changing_amount_is_reported():
    src = TF1_HEAD + """train_op = tf.train.GradientDescentOptimizer(0.1).minimize(loss)
sess = tf.Session()
sess.run(tf.global_variables_initializer())
step, stride = 0, 1
while step < 100:
    sess.run(train_op)
    step += stride
    stride = stride * 2
"""
    result = _convert(src)
    assert result.status == "converted"
    assert "while step < 100:" in result.code
    assert any("cannot see how many steps this training loop runs" in w.message and w.line == 10
               for w in result.warnings)


def test_tf1_namespace_follows_the_session_spelling():
    src = """import tensorflow as tf
from tensorflow.compat.v1 import Session, train

tf.compat.v1.disable_eager_execution()
w = tf.Variable(1.0)
train_op = train.AdamOptimizer(0.1).minimize(tf.square(w))
with Session() as sess:
    sess.run(tf.compat.v1.global_variables_initializer())
    for _ in range(10):
        sess.run(train_op)
"""
    result = _convert(src)
    assert result.status == "converted", result.error
    assert "with Session(config=tf.compat.v1.ConfigProto(gpu_options=tf.compat.v1.GPUOptions(" in result.code


def test_inline_gpu_options_get_the_visible_device_list():
    src = TF1_HEAD + """train_op = tf.train.GradientDescentOptimizer(0.1).minimize(loss)
with tf.Session(config=tf.ConfigProto(gpu_options=tf.GPUOptions(allow_growth=True))) as sess:
    sess.run(tf.global_variables_initializer())
    for _ in range(10):
        sess.run(train_op)
"""
    result = _convert(src)
    assert result.status == "converted", result.error
    assert ("with tf.Session(config=tf.ConfigProto(gpu_options=tf.GPUOptions(allow_growth=True, "
            "visible_device_list=str(hvd.local_rank())))) as sess:") in result.code
    assert not [w for w in result.warnings if w.rule == "gpu-pinning"]


def test_singular_monitored_session_is_pinned_and_broadcast():
    src = TF1_HEAD + """step = tf.train.get_or_create_global_step()
train_op = tf.train.AdamOptimizer(0.1).minimize(loss, global_step=step)
with tf.train.SingularMonitoredSession(hooks=[tf.train.StopAtStepHook(last_step=100)],
                                       checkpoint_dir="warm_start") as sess:
    while not sess.should_stop():
        sess.run(train_op)
"""
    result = _convert(src)
    assert result.status == "converted", result.error
    code = result.code
    assert "hooks=[hvd.BroadcastGlobalVariablesHook(0), tf.train.StopAtStepHook(last_step=max(1, 100 // hvd.size()))]" in code
    # SingularMonitoredSession only restores from checkpoint_dir: every rank may read it.
    assert 'checkpoint_dir="warm_start",' in code
    assert "config=tf.ConfigProto(gpu_options=tf.GPUOptions(visible_device_list=str(hvd.local_rank())))" in code


def test_hooks_passed_as_none_or_an_expression():
    src = TF1_HEAD + """step = tf.train.get_or_create_global_step()
train_op = tf.train.AdamOptimizer(0.1).minimize(loss, global_step=step)
extra = [tf.train.StopAtStepHook(last_step=100)]
with tf.train.MonitoredTrainingSession(hooks=extra + [tf.train.NanTensorHook(loss)]) as sess:
    while not sess.should_stop():
        sess.run(train_op)
with tf.train.MonitoredTrainingSession(hooks=None) as sess:
    sess.run(train_op)
"""
    result = _convert(src)
    assert result.status == "converted", result.error
    assert "hooks=[hvd.BroadcastGlobalVariablesHook(0), *(extra + [tf.train.NanTensorHook(loss)])]" in result.code
    assert "hooks=[hvd.BroadcastGlobalVariablesHook(0)]" in result.code
    assert ".append(" not in result.code


def test_broadcast_follows_a_checkpoint_restore_after_the_initialisation():
    src = TF1_HEAD + """train_op = tf.train.GradientDescentOptimizer(0.1).minimize(loss)
saver = tf.train.Saver()
with tf.Session() as sess:
    sess.run(tf.global_variables_initializer())
    latest = tf.train.latest_checkpoint("ckpt")
    if latest:
        saver.restore(sess, latest)
    for _ in range(10):
        sess.run(train_op)
"""
    result = _convert(src)
    assert result.status == "converted", result.error
    assert """    if latest:
        saver.restore(sess, latest)
    # Horovod: broadcast initial variables from rank 0.
    sess.run(hvd.broadcast_global_variables(0))
""" in result.code


def test_graph_finalized_before_initialisation_is_refused():
    src = TF1_HEAD + """train_op = tf.train.GradientDescentOptimizer(0.1).minimize(loss)
init = tf.global_variables_initializer()
tf.get_default_graph().finalize()
with tf.Session() as sess:
    sess.run(init)
    for _ in range(10):
        sess.run(train_op)
"""
    result = _convert(src)
    assert result.status == "unsupported"
    assert result.error_line == 8
    assert "finalized" in result.error


def test_file_writing_hook_bound_to_a_name_is_built_and_used_on_rank_0_only():
    src = TF1_HEAD + """step = tf.train.get_or_create_global_step()
train_op = tf.train.AdamOptimizer(0.1).minimize(loss, global_step=step)
saver_hook = tf.train.CheckpointSaverHook("ckpt", save_steps=10)
with tf.train.MonitoredSession(hooks=[tf.train.StopAtStepHook(last_step=100), saver_hook]) as sess:
    while not sess.should_stop():
        sess.run(train_op)
"""
    result = _convert(src)
    assert result.status == "converted", result.error
    code = result.code
    assert 'saver_hook = tf.train.CheckpointSaverHook("ckpt", save_steps=10) if hvd.rank() == 0 else None' in code
    assert "*([saver_hook] if hvd.rank() == 0 else [])]" in code



def test_array_shuffled_each_epoch_with_another_is_not_sliced_alone():
    """``X, X_test = shuffle(X, X_test)`` every epoch (lazyprogrammer's
    RBM): X fed in offset batches could be sliced at the method's entry,
    but alone it would no longer have X_test's rows to be shuffled with
    (sklearn raises on the lengths). Not sliced; the feed is warned."""
    src = MNIST_HEAD.replace("sess = tf.Session()", "") + '''from sklearn.utils import shuffle


class Model:
    def __init__(self):
        self.session = tf.Session()
        self.session.run(tf.global_variables_initializer())

    def fit(self, X, X_test, epochs=10, batch_sz=32):
        N = X.shape[0]
        for i in range(epochs):
            X, X_test = shuffle(X, X_test)
            for j in range(N // batch_sz):
                xb = X[j * batch_sz:(j + 1) * batch_sz].toarray()
                self.session.run(train_op, feed_dict={x: xb, lr: 0.01})


Model().fit(X_all, Y_all)
'''
    result = _convert(src)
    assert result.status == "converted", result.error
    assert "X = X[hvd.rank()::hvd.size()]" not in result.code, result.code
    assert [w for w in result.warnings if "feed_dict" in w.message], result.warnings
    # shuffled with itself only, it is sliced at the entry (stop 25's shape)
    alone = _convert(src.replace("X, X_test = shuffle(X, X_test)", "X = shuffle(X)"))
    assert "X = X[hvd.rank()::hvd.size()][:len(X) // hvd.size()]" in alone.code, alone.code


def test_a_batch_wrapped_by_a_function_reading_only_its_rows_is_followed_to_the_arrays():
    result = _fixture("session/batch_helper_wrapped_one_hot")
    assert not [w for w in result.warnings if w.level == "WARNING"]
    assert "y_train = y_train[hvd.rank()::hvd.size()][:len(y_train) // hvd.size()]" in result.code


def test_a_batch_wrapped_by_a_function_reading_a_module_array_is_not_followed():
    # one_hot() reads a table of the module: a lookup into data tfdist cannot
    # tell is divided or not, so the fed labels stay hand work
    source = (FIXTURES / "session/batch_helper_wrapped_one_hot/input.py").read_text()
    source = source.replace("n_classes = 6\n", "n_classes = 6\ncodes = np.eye(n_classes)\n")
    source = source.replace("return np.eye(n_classes)[np.array(y_, dtype=np.int32)]",
                            "return codes[np.array(y_, dtype=np.int32)]")
    result = _convert(source)
    assert "codes[np.array(y_" in result.code
    assert any("feed_dict is built where tfdist cannot follow it" in w.message for w in result.warnings)


def test_a_batch_function_given_a_fixed_table_beside_the_rows_is_followed():
    # str_idx(x[i:i + B], dictionary, maxlen): a table bound before the loop,
    # whole on every rank, passed beside the rows; the rows are still divided
    source = (FIXTURES / "session/batch_helper_wrapped_one_hot/input.py").read_text()
    source = source.replace("n_classes = 6\n", "n_classes = 6\ncodes = np.eye(n_classes)\n")
    source = source.replace("def one_hot(y_):", "def one_hot(y_, table):")
    source = source.replace("return np.eye(n_classes)[np.array(y_, dtype=np.int32)]",
                            "return table[np.array(y_, dtype=np.int32)]")
    table = source.replace("one_hot(extract_batch_size(y_train, step, batch_size))",
                           "one_hot(extract_batch_size(y_train, step, batch_size), codes)")
    result = _convert(table)
    assert not [w for w in result.warnings if w.level == "WARNING"], result.warnings
    assert "y_train = y_train[hvd.rank()::hvd.size()][:len(y_train) // hvd.size()]" in result.code
    # table[labels] looks rows up by the batch's values: not a batch helper
    # cutting rows of the table (which would then be sliced by rank)
    assert "codes = codes[" not in result.code, result.code
    # the table is an array whose rows the loop feeds too: divided, it would
    # no longer be the original's table -- not followed
    rows = source.replace("one_hot(extract_batch_size(y_train, step, batch_size))",
                          "one_hot(extract_batch_size(y_train, step, batch_size), X_train)")
    result = _convert(rows)
    assert any("feed_dict is built where tfdist cannot follow it" in w.message for w in result.warnings)
