"""A tape loop stepping an optimizer built where tfdist cannot see (a
parameter only another module's call binds): its learning rate is scaled on
the object, once, where the step runs eagerly -- never inside a graph, where
the scaling would be an op run at every step."""
import pytest

from tfdist.api import convert_source
from tfdist.options import Options

HEAD = '''import tensorflow as tf

loss_object = tf.keras.losses.SparseCategoricalCrossentropy(from_logits=True)
'''

EAGER = HEAD + '''

def train(dataset, model, optimizer):
    for images, labels in dataset:
        with tf.GradientTape() as tape:
            loss = loss_object(labels, model(images, training=True))
        grads = tape.gradient(loss, model.trainable_variables)
        optimizer.apply_gradients(zip(grads, model.trainable_variables))
'''

STEP = '''
def train_step(images, labels, model, optimizer):
    with tf.GradientTape() as tape:
        loss = loss_object(labels, model(images, training=True))
    grads = tape.gradient(loss, model.trainable_variables)
    optimizer.apply_gradients(zip(grads, model.trainable_variables))
    return loss
'''

LOOP = '''

def train(dataset, model, optimizer):
    for images, labels in dataset:
        train_step(images, labels, model, optimizer)
'''

UNKNOWN = "where optimizer is created is unknown"


def _convert(src):
    result = convert_source(src.encode(), "train.py")
    assert result.status == "converted", result.error
    return result.code, [w.message for w in result.warnings]


def test_eager_apply_scales_the_parameter_at_the_step():
    out, warnings = _convert(EAGER)
    assert "with_scaled_learning_rate(optimizer, hvd.size()).apply_gradients(" in out
    assert not warnings


def test_decorated_step_gets_the_optimizer_scaled_where_the_eager_loop_hands_it_over():
    out, warnings = _convert(HEAD + "\n\n@tf.function" + STEP + LOOP)
    assert "train_step(images, labels, model, with_scaled_learning_rate(optimizer, hvd.size()))" in out
    assert "with_scaled_learning_rate(optimizer, hvd.size()).apply_gradients" not in out
    assert not warnings


@pytest.mark.parametrize("src", [
    # the loop itself is traced: no eager place to scale it
    HEAD + "\n\n@tf.function" + STEP + "\n\n@tf.function" + LOOP,
    # tf.function of something not found here: no function can be said to run eagerly
    HEAD + STEP + LOOP + "\n\nfast = tf.function(lambda *args: train_step(*args))\n",
    # rebound to its traced self (``train_step = tf.function(train_step)``): its calls are not followed
    # through the rebinding, so the traced step's argument is not known to be the only way in
    HEAD + "\n" + STEP + "\n\ntrain_step = tf.function(train_step)\n" + LOOP,
    # handed on to another runner: the calls of the step are not all found
    HEAD + "\n\n@tf.function" + STEP + LOOP + "\n\nrunner = [train_step]\n",
])
def test_left_to_the_user_where_no_eager_place_is_certain(src):
    out, warnings = _convert(src)
    assert "with_scaled_learning_rate" not in out
    assert any(UNKNOWN in w for w in warnings), warnings


def test_an_optimizer_built_here_is_scaled_where_it_is_built_not_at_run_time():
    src = EAGER + '''

model = tf.keras.Sequential([tf.keras.layers.Dense(2)])
dataset = tf.data.Dataset.from_tensor_slices((tf.ones([64, 3]), tf.zeros([64], tf.int64))).batch(8)
train(dataset, model, tf.keras.optimizers.SGD(0.1))
'''
    out, warnings = _convert(src)
    assert "tf.keras.optimizers.SGD(0.1 * hvd.size())" in out
    assert "with_scaled_learning_rate" not in out
    assert not warnings


def test_no_run_time_scaling_under_a_warmup_or_without_scaling():
    for backend in (Options(backend="horovod", warmup_epochs=1), Options(backend="horovod", lr_scaling="none")):
        result = convert_source(EAGER.encode(), "train.py", backend=backend)
        assert result.status == "converted" and "with_scaled_learning_rate" not in result.code, backend


def test_an_optimizer_bound_nowhere_is_not_said_to_be_scaled():
    """A snippet stepping a name it never binds fails as written: warned, not wrapped."""
    src = HEAD + '''
model = tf.keras.Sequential([tf.keras.layers.Dense(2)])
with tf.GradientTape() as tape:
    loss = loss_object(tf.zeros([4], tf.int64), model(tf.ones([4, 3])))
grads = tape.gradient(loss, model.trainable_variables)
optimizer.apply_gradients(zip(grads, model.trainable_variables))
'''
    out, warnings = _convert(src)
    assert "with_scaled_learning_rate" not in out
    assert any(UNKNOWN in w for w in warnings), warnings
