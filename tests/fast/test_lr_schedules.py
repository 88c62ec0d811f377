"""Step-keyed learning-rate schedules: each process takes 1/N of the steps,
so their step counts are divided by N where the rate is scaled, and the
schedule changes the rate at the same share of the data as the original."""
import pytest

from tfdist.api import convert_source
from tfdist.options import Options

TF1 = '''import tensorflow.compat.v1 as tf
tf.disable_eager_execution()
x = tf.placeholder(tf.float32, [None, 3])
y = tf.placeholder(tf.float32, [None, 1])
w = tf.Variable(tf.zeros([3, 1]))
loss = tf.reduce_mean(tf.square(tf.matmul(x, w) - y))
step = tf.train.get_or_create_global_step()
lr = {schedule}
train_op = tf.train.GradientDescentOptimizer(lr).minimize(loss, step)
with tf.Session() as sess:
    sess.run(tf.global_variables_initializer())
    for i in range(100):
        sess.run(train_op, feed_dict={{x: [[1, 2, 3]], y: [[1]]}})
'''

KERAS = '''import tensorflow as tf
lr = {schedule}
model = tf.keras.Sequential([tf.keras.layers.Dense(1)])
model.compile(optimizer=tf.keras.optimizers.SGD(lr), loss="mse")
model.fit(tf.data.Dataset.range(64).map(lambda i: (tf.ones([3]), 1.0)).batch(8), epochs=2)
'''


@pytest.mark.parametrize("template, schedule, expected", [
    (TF1, "tf.train.piecewise_constant(step, [100, 200], [0.1, 0.01, 0.001])",
     "lr = tf.train.piecewise_constant(step, [max(1, b // hvd.size()) for b in [100, 200]], [0.1, 0.01, 0.001])"),
    (TF1, "tf.train.cosine_decay(0.1, step, decay_steps=STEPS)".replace("STEPS", "100 + 20"),
     "lr = tf.train.cosine_decay(0.1, step, decay_steps=max(1, (100 + 20) // hvd.size()))"),
    (KERAS, "tf.keras.optimizers.schedules.PiecewiseConstantDecay([50, 80], [0.1, 0.01, 0.001])",
     "lr = tf.keras.optimizers.schedules.PiecewiseConstantDecay([max(1, b // hvd.size()) for b in [50, 80]], "
     "[v * hvd.size() for v in [0.1, 0.01, 0.001]])"),
    (KERAS, "tf.keras.optimizers.schedules.CosineDecay(0.1, 1000, warmup_target=0.2, warmup_steps=30)",
     "lr = tf.keras.optimizers.schedules.CosineDecay(0.1 * hvd.size(), max(1, 1000 // hvd.size()), "
     "warmup_target=0.2, warmup_steps=max(1, 30 // hvd.size()))"),
])
def test_step_counts_are_divided_with_a_reported_change(template, schedule, expected):
    result = convert_source(template.format(schedule=schedule))
    assert result.status == "converted", result.error
    assert expected in result.data.decode()
    assert any("divided by" in c.message and "same share of the data" in c.message for c in result.changes)


def test_a_schedule_shared_by_two_optimizers_is_divided_once():
    src = KERAS.format(schedule="tf.keras.optimizers.schedules.ExponentialDecay(0.1, 100, 0.9)") + (
        "other = tf.keras.Sequential([tf.keras.layers.Dense(1)])\n"
        "other.compile(optimizer=tf.keras.optimizers.Adam(lr), loss=\"mse\")\n")
    out = convert_source(src).data.decode()
    assert out.count("max(1, 100 // hvd.size())") == 1 and "100 // hvd.size()) // hvd.size()" not in out


def test_full_batch_training_keeps_its_steps_and_its_schedule():
    src = '''import numpy as np
import tensorflow.compat.v1 as tf
tf.disable_eager_execution()
data = np.random.rand(64, 3).astype("float32")
labels = data.sum(axis=1, keepdims=True)
x = tf.placeholder(tf.float32, [None, 3])
y = tf.placeholder(tf.float32, [None, 1])
w = tf.Variable(tf.zeros([3, 1]))
loss = tf.reduce_mean(tf.square(tf.matmul(x, w) - y))
step = tf.train.get_or_create_global_step()
lr = tf.train.exponential_decay(0.1, step, 100, 0.9)
train_op = tf.train.GradientDescentOptimizer(lr).minimize(loss, step)
with tf.Session() as sess:
    sess.run(tf.global_variables_initializer())
    for i in range(100):
        sess.run(train_op, feed_dict={x: data, y: labels})
'''
    out = convert_source(src).data.decode()
    assert "tf.train.exponential_decay(0.1, step, 100, 0.9)" in out
    assert "range(100)" in out


# ------------------------------------------------- LearningRateScheduler
def _scaled_epoch_rates():
    from tfdist.backends.base import scaled_epoch_rates_definition
    namespace: dict = {}
    exec(scaled_epoch_rates_definition("scaled_epoch_rates"), namespace)  # the code written into scripts
    return namespace["scaled_epoch_rates"]


def test_epoch_schedule_of_the_epoch_only_is_scaled():
    """schedule(epoch) -> absolute rates (the forecasting notebooks' rate
    finder): every rate times the factor, called as Keras calls it."""
    wrap = _scaled_epoch_rates()
    finder = wrap(lambda epoch: 1e-8 * 10 ** (epoch / 20), 4)
    assert finder(0, 4e-8) == pytest.approx(4e-8)
    assert finder(20, 123.0) == pytest.approx(4e-7)


def test_epoch_schedule_of_epoch_and_rate_gets_the_single_process_rate():
    """schedule(epoch, rate): handed the rate as one process had it, so an
    absolute branch is scaled and a relative one stays relative to the
    scaled rate."""
    wrap = _scaled_epoch_rates()

    def schedule(epoch, lr):
        if epoch < 10:
            return 1e-3          # absolute
        return lr * 0.5          # relative

    scaled = wrap(schedule, 2)
    assert scaled(0, 2e-3) == pytest.approx(2e-3)
    assert scaled(12, 2e-3) == pytest.approx(1e-3)   # half the scaled rate
    seen = []
    wrap(lambda epoch, lr: seen.append(lr) or lr, 8)(3, 0.8)
    assert seen == [pytest.approx(0.1)]


def test_learning_rate_scheduler_is_scaled_on_both_engines():
    source = '''\
import numpy as np
import tensorflow as tf

x = np.random.rand(64, 2).astype("float32")
y = x.sum(axis=1, keepdims=True)
model = tf.keras.Sequential([tf.keras.layers.Dense(1)])
model.compile(optimizer=tf.keras.optimizers.SGD(1e-3), loss="mse")


def schedule(epoch, lr):
    return 1e-3 if epoch < 5 else lr * 0.9


model.fit(x, y, epochs=10, callbacks=[tf.keras.callbacks.LearningRateScheduler(schedule, verbose=1)])
'''
    from tfdist.api import convert_source
    for backend, size in (("horovod", "hvd.size()"), ("tf-distribute", "strategy.num_replicas_in_sync")):
        result = convert_source(source.encode(), "train.py", backend=backend)
        assert result.status == "converted" and result.warnings == [], (backend, result.warnings)
        assert f"LearningRateScheduler(scaled_epoch_rates(schedule, {size}), verbose=1 if " in result.code, result.code
        assert "def scaled_epoch_rates(schedule, factor):" in result.code
    none = convert_source(source.encode(), "train.py", backend=Options(backend="horovod", lr_scaling="none"))
    assert "scaled_epoch_rates" not in none.code


LOSS_SCALED_STEP = '''import numpy as np
import tensorflow as tf
from tensorflow.keras import mixed_precision

x = np.random.rand(256, 8).astype("float32")
y = np.random.rand(256, 1).astype("float32")
model = tf.keras.Sequential([tf.keras.layers.Dense(1)])
optimizer = tf.keras.optimizers.RMSprop(learning_rate=0.001)
optimizer = mixed_precision.LossScaleOptimizer(optimizer)


@tf.function
def train_step(xb, yb):
    with tf.GradientTape() as tape:
        loss = tf.reduce_mean((model(xb) - yb) ** 2)
        scaled_loss = optimizer.get_scaled_loss(loss)
    grads = optimizer.get_unscaled_gradients(tape.gradient(scaled_loss, model.trainable_variables))
    optimizer.apply_gradients(zip(grads, model.trainable_variables))


for xb, yb in tf.data.Dataset.from_tensor_slices((x, y)).batch(32):
    train_step(xb, yb)
'''


@pytest.mark.parametrize("backend,scaled", [("horovod", "learning_rate=0.001 * hvd.size()"),
                                            ("tf-distribute", "learning_rate=0.001 * strategy.num_replicas_in_sync")])
def test_a_loss_scale_wrapper_is_followed_to_the_optimizer_it_wraps(backend, scaled):
    """The step applies the LossScaleOptimizer the optimizer name was rebound
    to: its rate is the wrapped RMSprop's, scaled where that is built."""
    result = convert_source(LOSS_SCALED_STEP, "mixed.py", backend=backend)
    assert result.status == "converted", result.error
    assert f"optimizer = tf.keras.optimizers.RMSprop({scaled})" in result.code, result.code
    assert not [w for w in result.warnings if w.rule == "lr-scaling"], result.warnings


OWN_OPTIMIZERS = '''import numpy as np
import tensorflow as tf

x = np.random.rand(64, 4).astype("float32")
y = np.random.rand(64, 1).astype("float32")


class HandedOn(tf.keras.optimizers.Optimizer):
    def __init__(self, learning_rate=0.02, name="HandedOn", **kwargs):
        super().__init__(learning_rate=learning_rate, name=name, **kwargs)


class Hyper(tf.keras.optimizers.Optimizer):
    def __init__(self, lr=0.5, name="Hyper", **kwargs):
        super().__init__(name, **kwargs)
        self._set_hyper("learning_rate", lr)


class KeptAside(tf.keras.optimizers.Optimizer):
    def __init__(self, learning_rate=0.3, name="KeptAside", **kwargs):
        super().__init__(name=name, **kwargs)
        self.base = learning_rate


model = tf.keras.Sequential([tf.keras.layers.Dense(1)])
model.compile(optimizer=CALL, loss="mse")
model.fit(x, y, epochs=1)
'''


@pytest.mark.parametrize("call,scaled", [
    ("HandedOn()", "HandedOn(learning_rate=0.02 * hvd.size())"),        # the default, written out
    ("HandedOn(0.1)", "HandedOn(0.1 * hvd.size())"),                     # positional, by the constructor's order
    ("HandedOn(lr=0.1)", "HandedOn(lr=0.1 * hvd.size())"),               # by the other rate keyword
    ("Hyper()", "Hyper(lr=0.5 * hvd.size())"),                           # set as the "learning_rate" hyperparameter
])
def test_an_optimizer_class_of_the_script_has_the_rate_its_constructor_hands_on_scaled(call, scaled):
    result = convert_source(OWN_OPTIMIZERS.replace("CALL", call), "own.py")
    assert result.status == "converted", result.error
    assert f"optimizer=hvd.DistributedOptimizer({scaled})" in result.code, result.code
    assert not [w for w in result.warnings if w.rule == "lr-scaling"], result.warnings


def test_an_optimizer_class_keeping_its_rate_parameter_aside_is_warned():
    """A learning_rate parameter the constructor does not hand on as the
    rate is no evidence of the rate: nothing is written, a warning says so."""
    result = convert_source(OWN_OPTIMIZERS.replace("CALL", "KeptAside()"), "own.py")
    assert "KeptAside()" in result.code
    assert [w for w in result.warnings if w.rule == "lr-scaling" and "cannot tell the learning rate of KeptAside" in w.message]
