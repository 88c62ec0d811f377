"""Custom train_step / test_step under --backend tf-distribute: what is
refused, with its line, because a wrong division of the loss would train
wrong silently (converted cases: fixtures/keras/*_step*/)."""
from __future__ import annotations

import textwrap

import pytest

from tfdist.api import convert_source

HEAD = '''import tensorflow as tf


class Net(tf.keras.Model):
    def __init__(self):
        super().__init__()
        self.dense = tf.keras.layers.Dense(1)
        self.loss_fn = tf.keras.losses.MeanSquaredError()

    def call(self, x):
        return self.dense(x)

    def train_step(self, data):
        x, y = data
        with tf.GradientTape() as tape:
            pred = self(x, training=True)
'''
TAIL = '''

x = tf.random.normal([256, 4])
y = tf.reduce_sum(x, axis=1, keepdims=True)
model = Net()
model.compile(optimizer=tf.keras.optimizers.SGD(0.1), loss="mse")
model.fit(tf.data.Dataset.from_tensor_slices((x, y)).batch(32), epochs=1)
'''
APPLY = '''
        grads = tape.gradient(loss, self.trainable_variables)
        self.optimizer.apply_gradients(zip(grads, self.trainable_variables))
        return {"loss": loss}'''


def _tfd(body: str, apply: str = APPLY):
    src = HEAD + textwrap.indent(textwrap.dedent(body).strip("\n"), " " * 12) + apply + TAIL
    return src, convert_source(src.encode(), "net.py", backend="tf-distribute")


def _line(src: str, text: str) -> int:
    return next(i for i, l in enumerate(src.splitlines(), 1) if text in l)


@pytest.mark.parametrize("body,at,needle", [
    # (Keras 3 divides self.compute_loss, not a mean added to it: that term is divided by the
    # conversion -- test_train_step_loss_following.py)
    # a mean of a value Keras already divided
    ("loss = tf.reduce_mean(self.compute_loss(x, y, pred))", "tf.reduce_mean(self", "of a loss Keras already divides"),
    # a callable nothing in the module binds: a Loss object (divided) or a function (not)
    ("loss = self.loss_callable(y, pred)", "self.loss_callable", "cannot tell whether Keras already divides"),
    # in a loop over what a library call gives, the loss is what the loop target holds
    ("for loss in map(tf.identity, [tf.reduce_mean(tf.square(pred - y))]):\n    pass", "tape.gradient(loss",
     "cannot tell whether Keras already divides"),
    # a Loss subclass of this module whose reduction it cannot read
    ("loss = Custom(reduction=pick())(y, pred)", "Custom(reduction=pick())(y, pred)",
     "cannot tell whether Keras already divides"),
])
def test_undecidable_losses_are_refused_with_their_line(body, at, needle):
    src, result = _tfd(body)
    assert result.status == "unsupported", result.status
    assert needle in result.error, result.error
    assert result.error_line == _line(src, at), (result.error_line, result.error)


DIVIDED = "scaled_loss = loss / strategy.num_replicas_in_sync"


@pytest.mark.parametrize("body", [
    # nothing in these is a value Keras divides: a sum or mean of the step's own, a
    # loss function (not a Loss object), a Loss object reducing by sum, the model's
    # regularisation losses, weights that are tensors or expressions
    "loss = tf.reduce_sum(tf.square(pred - y))",
    "loss = tf.reduce_sum(tf.square(pred - y)) / tf.cast(tf.shape(x)[0], tf.float32)",
    "loss = tf.reduce_mean(tf.square(pred - y))\nloss += tf.reduce_mean(tf.abs(pred))",
    "loss = tf.keras.losses.mean_squared_error(y, pred)",
    "loss = tf.reduce_mean(tf.keras.losses.mean_squared_error(y, pred)) + tf.add_n(self.losses or [0.0])",
    "loss = tf.keras.losses.MeanSquaredError(reduction='sum')(y, pred) / 8",
    "alpha = tf.constant(0.3)\nloss = alpha * tf.reduce_mean(tf.square(pred - y)) + (1 - alpha) * tf.reduce_mean(tf.abs(pred - y))",
    "loss = 1e-4 * tf.add_n([tf.nn.l2_loss(v) for v in self.trainable_variables]) + tf.reduce_mean(tf.square(pred - y))",
    "mse = lambda a, b: tf.reduce_mean(tf.square(a - b))\nloss = mse(y, pred)",
])
def test_losses_keras_does_not_divide_are_divided_once(body):
    src, result = _tfd(body)
    assert result.status == "converted", result.error
    text = result.data.decode()
    assert text.count(DIVIDED) == 1 and "tape.gradient(scaled_loss" in text, text


def test_compute_average_loss_is_this_replicas_share_already():
    src, result = _tfd("loss = tf.nn.compute_average_loss(tf.reduce_sum(tf.square(pred - y), axis=-1))")
    assert result.status == "converted", result.error
    text = result.data.decode()
    # not divided again; the step reports the mean, multiplied back
    assert DIVIDED not in text and "loss = scaled_loss * strategy.num_replicas_in_sync" in text, text


def test_gradients_clipped_before_the_optimizer_are_summed_first():
    """Clipping each replica's share is not clipping the global gradient:
    summed where the tape returns them, handed to the optimizer once
    (tests/fast/test_gradient_changes.py has the other shapes)."""
    apply = '''
        grads = tape.gradient(loss, self.trainable_variables)
        grads, _ = tf.clip_by_global_norm(grads, 1.0)
        self.optimizer.apply_gradients(zip(grads, self.trainable_variables))
        return {"loss": loss}'''
    src, result = _tfd("loss = tf.reduce_mean(tf.square(pred - y))", apply)
    assert result.status == "converted", result.error
    text = result.data.decode()
    assert "grads = global_gradients(tape.gradient(scaled_loss, self.trainable_variables))" in text
    assert "self.optimizer.apply_gradients(replica_part(zip(grads, self.trainable_variables)))" in text
    assert "grads, _ = tf.clip_by_global_norm(grads, 1.0)" in text


def test_gradients_no_optimizer_applies_are_refused():
    apply = '''
        grads = tape.gradient(loss, self.trainable_variables)
        for v, g in zip(self.trainable_variables, grads):
            v.assign_sub(0.1 * g)
        return {"loss": loss}'''
    src, result = _tfd("loss = tf.reduce_mean(tf.square(pred - y))", apply)
    assert result.status == "unsupported"
    assert result.error_line == _line(src, "tape.gradient(loss") and "no Keras optimizer applies" in result.error


def test_skipped_aggregation_is_refused():
    apply = '''
        grads = tape.gradient(loss, self.trainable_variables)
        self.optimizer.apply_gradients(zip(grads, self.trainable_variables), skip_gradients_aggregation=True)
        return {"loss": loss}'''
    src, result = _tfd("loss = tf.reduce_mean(tf.square(pred - y))", apply)
    assert result.status == "unsupported"
    assert result.error_line == _line(src, "skip_gradients_aggregation") and "does not sum" in result.error


def test_an_overridden_compute_loss_calling_keras_is_refused():
    src = HEAD.replace("    def train_step", "    def compute_loss(self, x, y, y_pred, sample_weight=None):\n"
                       "        return super().compute_loss(x, y, y_pred) + tf.reduce_mean(tf.abs(y_pred))\n\n"
                       "    def train_step") \
        + " " * 12 + "loss = self.compute_loss(x, y, pred)" + APPLY + TAIL
    result = convert_source(src.encode(), "net.py", backend="tf-distribute")
    assert result.status == "unsupported", result.status
    assert "overridden" in result.error and result.error_line == _line(src, "loss = self.compute_loss"), result.error


@pytest.mark.parametrize("method", ["compute_loss", "_compute_loss"])
def test_a_method_of_the_class_named_like_keras_s_is_followed_as_the_class_s_own(method):
    """``self._compute_loss(data)`` of a siamese trainer: the class's own
    method (no super() call), a mean it computes: divided once."""
    src = HEAD.replace("    def train_step", f"    def {method}(self, x, y, y_pred, sample_weight=None):\n"
                       "        return tf.reduce_mean(tf.square(y_pred - y))\n\n    def train_step") \
        + " " * 12 + f"loss = self.{method}(x, y, pred)" + APPLY + TAIL
    result = convert_source(src.encode(), "net.py", backend="tf-distribute")
    assert result.status == "converted", result.error
    assert result.data.decode().count(DIVIDED) == 1


def test_plain_mean_is_divided_once_and_keras_loss_not_at_all():
    """The two converted shapes side by side: the step's own mean is divided
    by the replicas (once); self.compute_loss, divided by Keras, is not."""
    _, own = _tfd("loss = tf.reduce_mean(tf.square(pred - y))")
    assert own.status == "converted", own.error
    text = own.data.decode()
    assert text.count("/ strategy.num_replicas_in_sync") == 1
    assert "tape.gradient(scaled_loss, self.trainable_variables)" in text
    _, keras = _tfd("loss = self.compute_loss(x, y, pred)")
    assert keras.status == "converted", keras.error
    text = keras.data.decode()
    assert "/ strategy.num_replicas_in_sync" not in text
    # the step returns loss: the mean again, the gradient of what Keras divided
    assert "loss = scaled_loss * strategy.num_replicas_in_sync" in text
    assert "tape.gradient(scaled_loss, self.trainable_variables)" in text


def _with_methods(methods: str, body: str, init: str = "", construct: str = "Net()"):
    src = HEAD.replace("    def train_step", textwrap.indent(textwrap.dedent(methods).strip("\n"), " " * 4)
                       + "\n\n    def train_step")
    if init:
        src = src.replace("    def __init__(self):\n        super().__init__()",
                          f"    def __init__(self, {init}):\n        super().__init__()\n        self.{init} = {init}")
    src += textwrap.indent(textwrap.dedent(body).strip("\n"), " " * 12) + APPLY + TAIL.replace("Net()", construct)
    return src, convert_source(src.encode(), "net.py", backend="tf-distribute")


@pytest.mark.parametrize("methods,body,kind", [
    # the loss a method of the model returns: the step's own mean
    ("def log_loss(self, x, y):\n    return -tf.reduce_mean(-tf.square(self(x) - y))", "loss = self.log_loss(x, y)",
     "plain"),
    # ... or Keras's (compute_loss, divided by Keras)
    ("def keras_loss(self, x, y, pred):\n    return self.compute_loss(x, y, pred)",
     "loss = self.keras_loss(x, y, pred)", "keras"),
    # a sum the method computes: the step's own too, divided once
    ("def sum_loss(self, pred, y):\n    return tf.reduce_sum(tf.square(pred - y))", "loss = self.sum_loss(pred, y)",
     "plain"),
    # a callable the method is handed from nowhere in the module: refused at its call
    ("def handed_loss(self, pred, y):\n    return self.loss_callable(pred, y)", "loss = self.handed_loss(pred, y)",
     None),
])
def test_a_loss_a_method_returns_is_followed_into_it(methods, body, kind):
    src, result = _with_methods(methods, body)
    if kind is None:
        assert result.status == "unsupported" and "cannot tell whether Keras already divides" in result.error
        assert result.error_line == _line(src, "return self.loss_callable")
        return
    assert result.status == "converted", result.error
    text = result.data.decode()
    assert text.count("/ strategy.num_replicas_in_sync") == (1 if kind == "plain" else 0)
    assert "tape.gradient(scaled_loss, self.trainable_variables)" in text


@pytest.mark.parametrize("construct,converted", [
    ("Net(gp_weight=10.0)", True),  # a number: the penalty is still the step's own mean, weighted
    ("Net(gp_weight=tf.reduce_sum(x))", True),  # a tensor: nothing Keras divides either
    ("Net(gp_weight=tf.keras.losses.MeanSquaredError()(x, x))", False),  # a Loss object's value times a mean
])
def test_a_mean_weighted_by_a_number_the_constructor_keeps_is_the_steps_own(construct, converted):
    src, result = _with_methods(
        "def penalty(self, pred):\n    return tf.reduce_mean(tf.square(pred))",
        "loss = tf.reduce_mean(tf.square(pred - y)) + self.penalty(pred) * self.gp_weight",
        init="gp_weight", construct=construct)
    if converted:
        assert result.status == "converted", result.error
        assert result.data.decode().count("/ strategy.num_replicas_in_sync") == 1
    else:
        assert result.status == "unsupported" and result.error_line == _line(src, "self.penalty(pred) * self.gp_weight")


def test_a_step_method_train_step_calls_is_not_taken_for_its_loss():
    # the GAN recipe: train_step binds what a method running its own tape
    # returns (d_loss = self.d_step(x)); that method is no loss expression of
    # train_step's, and following it must not refuse the file
    src = '''import tensorflow as tf


class GAN(tf.keras.Model):
    def __init__(self, discriminator):
        super().__init__()
        self.discriminator = discriminator

    def compile(self, d_optimizer, loss_fn):
        super().compile()
        self.d_optimizer = d_optimizer
        self.loss_fn = loss_fn

    def d_step(self, images):
        with tf.GradientTape() as tape:
            loss = self.loss_fn(tf.ones((tf.shape(images)[0], 1)), self.discriminator(images))
        grads = tape.gradient(loss, self.discriminator.trainable_weights)
        self.d_optimizer.apply_gradients(zip(grads, self.discriminator.trainable_weights))
        return loss

    def train_step(self, images):
        d_loss = self.d_step(images)
        return {"d_loss": d_loss}


gan = GAN(tf.keras.Sequential([tf.keras.layers.Dense(1)]))
gan.compile(tf.keras.optimizers.Adam(1e-3), tf.keras.losses.BinaryCrossentropy(from_logits=True))
gan.fit(tf.data.Dataset.from_tensor_slices(tf.random.normal([64, 4])).batch(8), epochs=1)
'''
    result = convert_source(src.encode(), "gan.py", backend="tf-distribute")
    assert result.status == "converted", result.error


def test_a_keras_loss_object_in_a_tf_keras_step_is_reduced_by_the_step_for_multi_worker():
    # Keras 3 divides its value by the replicas (the gradient is kept); on
    # TF_CONFIG workers the conversion runs tf-keras, which raises on it: the
    # object (built in __init__, called only in the step) is built with
    # reduction="none" and the call averaged and divided as Keras 3 does
    # (test_train_step_loss_objects.py has the cases that stay warned)
    src, result = _tfd("loss = self.loss_fn(y, pred)")
    assert result.status == "converted", result.error
    text = result.data.decode()
    assert "tape.gradient(scaled_loss, self.trainable_variables)" in text
    assert 'self.loss_fn = tf.keras.losses.MeanSquaredError(reduction="none")' in text
    assert "loss = replica_mean_loss(self.loss_fn(y, pred))" in text
    assert not [w for w in result.warnings if w.level == "WARNING"]


def test_steps_in_methods_train_step_calls_are_converted_with_it():
    # the GAN recipe: train_step calls a discriminator step and a generator
    # step, each with its own tape and optimizer; both methods run only as
    # part of train_step, so each loss is divided as the step's own
    src = """import keras
import tensorflow as tf


class GAN(keras.Model):
    def __init__(self, discriminator, generator):
        super().__init__()
        self.discriminator = discriminator
        self.generator = generator

    def compile(self, d_optimizer, g_optimizer):
        super().compile()
        self.d_optimizer = d_optimizer
        self.g_optimizer = g_optimizer
        self.loss_fn = keras.losses.BinaryCrossentropy(from_logits=True)

    def discriminator_step(self, images, noise):
        with tf.GradientTape() as tape:
            real = self.discriminator(images)
            fake = self.discriminator(self.generator(noise))
            d_loss = self.loss_fn(tf.ones_like(real), real) + self.loss_fn(tf.zeros_like(fake), fake)
        grads = tape.gradient(d_loss, self.discriminator.trainable_weights)
        self.d_optimizer.apply_gradients(zip(grads, self.discriminator.trainable_weights))
        return d_loss

    def generator_step(self, noise):
        with tf.GradientTape() as tape:
            g_loss = tf.reduce_mean(tf.nn.softplus(-self.discriminator(self.generator(noise))))
        grads = tape.gradient(g_loss, self.generator.trainable_weights)
        self.g_optimizer.apply_gradients(zip(grads, self.generator.trainable_weights))
        return g_loss

    def train_step(self, images):
        noise = tf.random.normal((tf.shape(images)[0], 8))
        d_loss = self.discriminator_step(images, noise)
        g_loss = self.generator_step(noise)
        return {"d_loss": d_loss, "g_loss": g_loss}


gan = GAN(keras.Sequential([keras.layers.Dense(1)]), keras.Sequential([keras.layers.Dense(4)]))
gan.compile(keras.optimizers.Adam(1e-3), keras.optimizers.Adam(1e-3))
gan.fit(tf.data.Dataset.from_tensor_slices(tf.random.normal([64, 4])).batch(8), epochs=1)
"""
    result = convert_source(src.encode(), "gan.py", backend="tf-distribute")
    assert result.status == "converted", result.error
    assert not [w for w in result.warnings if w.level == "WARNING"], [w.message for w in result.warnings]
    text = result.data.decode()
    # the generator's own mean divided once; the Loss objects' sum kept (Keras 3 divides each)
    assert text.count("/ strategy.num_replicas_in_sync") == 1
    assert "scaled_g_loss = g_loss / strategy.num_replicas_in_sync" in text
    assert "tape.gradient(scaled_d_loss, self.discriminator.trainable_weights)" in text
    assert "d_loss = scaled_d_loss * strategy.num_replicas_in_sync" in text  # what discriminator_step returns: the mean
    # the optimizers the step methods apply are built in the scope before fit()
    assert "gan.d_optimizer.build(gan.discriminator.trainable_weights)" in text
    assert "gan.g_optimizer.build(gan.generator.trainable_weights)" in text


@pytest.mark.parametrize("in_method", [True, False])
def test_a_gradient_penalty_taken_with_respect_to_watched_inputs_is_no_training_gradient(in_method):
    # WGAN-GP: d(critic)/d(interpolated images) with tape.watch(interpolated),
    # in a method train_step calls or inline: part of the critic's loss, applied
    # by no optimizer; the critic's loss is the step's own mean, divided once
    penalty = """with tf.GradientTape() as gp_tape:
    gp_tape.watch(interpolated)
    pred = self.critic(interpolated)
grads = gp_tape.gradient(pred, [interpolated])[0]
gp = tf.reduce_mean((tf.norm(grads, axis=1) - 1.0) ** 2)"""
    method = ("    def gradient_penalty(self, interpolated):\n" + textwrap.indent(penalty, " " * 8)
              + "\n        return gp\n\n") if in_method else ""
    inline = "" if in_method else textwrap.indent(penalty, " " * 8) + "\n"
    src = f"""import tensorflow as tf


class WGAN(tf.keras.Model):
    def __init__(self, critic):
        super().__init__()
        self.critic = critic

    def compile(self, c_optimizer):
        super().compile()
        self.c_optimizer = c_optimizer

{method}    def train_step(self, real):
        fake = real + tf.random.normal(tf.shape(real))
        alpha = tf.random.uniform((tf.shape(real)[0], 1))
        interpolated = real + alpha * (fake - real)
{inline}        with tf.GradientTape() as tape:
            c_loss = tf.reduce_mean(self.critic(fake)) - tf.reduce_mean(self.critic(real))
            c_loss = c_loss + 10.0 * {"self.gradient_penalty(interpolated)" if in_method else "gp"}
        c_grads = tape.gradient(c_loss, self.critic.trainable_weights)
        self.c_optimizer.apply_gradients(zip(c_grads, self.critic.trainable_weights))
        return {{"c_loss": c_loss}}


wgan = WGAN(tf.keras.Sequential([tf.keras.layers.Dense(1)]))
wgan.compile(tf.keras.optimizers.Adam(1e-3))
wgan.fit(tf.data.Dataset.from_tensor_slices(tf.random.normal([64, 4])).batch(8), epochs=1)
"""
    result = convert_source(src.encode(), "wgan.py", backend="tf-distribute")
    assert result.status == "converted", (result.error, result.error_line)
    text = result.data.decode()
    assert "grads = gp_tape.gradient(pred, [interpolated])[0]" in text
    assert text.count("/ strategy.num_replicas_in_sync") == 1


# Shapes of public Keras 3 trainers (stop 42), written for this project: what a
# loss is bound to, followed through compile(), the class's own methods and classes.
TRAINER = '''import keras
import tensorflow as tf


class Trainer(keras.Model):
    def __init__(self, net):
        super().__init__()
        self.net = net
        self.tracker = keras.metrics.Mean(name="loss")
{compile}
    def call(self, x):
        return self.net(x)

    def train_step(self, data):
        x, y = data
        with tf.GradientTape() as tape:
            pred = self.net(x, training=True)
{body}
        grads = tape.gradient(loss, self.net.trainable_variables)
        self.optimizer.apply_gradients(zip(grads, self.net.trainable_variables))
        self.tracker.update_state(loss)
        return {{"loss": self.tracker.result()}}
{helpers}

x = tf.random.normal([64, 4])
y = tf.reduce_sum(x, axis=1, keepdims=True)
model = Trainer(keras.Sequential([keras.Input((4,)), keras.layers.Dense(1)]))
model.compile({arguments})
model.fit(x, y, batch_size=16, epochs=1)
'''
HANDED = '''
    def compile(self, optimizer, loss_fn):
        super().compile(optimizer=optimizer)
        self.loss_fn = loss_fn
'''
FORWARDED = '''
    def compile(self, **kwargs):
        super().compile(**kwargs)
'''
KEPT = "gradient of loss kept"


def _trainer(body, compile="", helpers="", arguments='optimizer="sgd", loss="mse"'):
    src = TRAINER.format(compile=compile, body=textwrap.indent(textwrap.dedent(body).strip("\n"), " " * 12),
                         helpers=textwrap.indent(textwrap.dedent(helpers), "") if helpers else "", arguments=arguments)
    return src, convert_source(src.encode(), "trainer.py", backend="tf-distribute")


def _divided_once(result):
    assert result.status == "converted", result.error
    return result.data.decode().count("/ strategy.num_replicas_in_sync") == 1


def _kept(result):
    assert result.status == "converted", result.error
    text = result.data.decode()
    return "/ strategy.num_replicas_in_sync" not in text and "scaled_loss = loss" in text


@pytest.mark.parametrize("arguments,divided", [
    # a module function returning a Loss object's value (a CycleGAN's generator loss): Keras divides it
    ('optimizer="sgd", loss_fn=generator_loss', False),
    # a module function computing a mean itself: nobody divides it
    ('optimizer="sgd", loss_fn=own_mean', True),
    # a Keras loss function handed in: per-example values, no reduction Keras divides
    ('optimizer="sgd", loss_fn=keras.losses.mean_squared_error', True),
])
def test_a_loss_function_handed_to_the_models_own_compile_is_followed(arguments, divided):
    helpers = '''

adversarial = keras.losses.MeanSquaredError()


def generator_loss(y, pred):
    return adversarial(y, pred)


def own_mean(y, pred):
    return tf.reduce_mean(tf.square(y - pred))
'''
    body = "loss = self.loss_fn(y, pred)"
    src, result = _trainer(body, HANDED, helpers, arguments)
    assert (_divided_once(result) if divided else _kept(result)), result.data.decode()


@pytest.mark.parametrize("compile_loss,divided", [
    ("keras.losses.mean_absolute_error", True),  # a loss function: values no Keras reduction divides
    ("keras.losses.MeanSquaredError()", False),   # a Loss object with a mean reduction: divided
])
def test_self_loss_is_what_compile_was_given_through_an_override_forwarding_kwargs(compile_loss, divided):
    body = "loss = tf.reduce_mean(self.loss(y, pred))" if divided else "loss = self.loss(y, pred)"
    src, result = _trainer(body, FORWARDED, arguments=f'optimizer="sgd", loss={compile_loss}')
    assert (_divided_once(result) if divided else _kept(result)), result.data.decode()


def test_a_loss_unpacked_from_the_tuple_a_method_returns_is_followed():
    """``loss, acc = self._loss_and_accuracy(...)`` (an image captioner)."""
    helpers = '''
    def _loss_and_accuracy(self, y, pred):
        values = keras.losses.MeanSquaredError(reduction=None)(y, pred)
        return tf.reduce_sum(values) / 16.0, tf.reduce_mean(tf.abs(y - pred))
'''
    src = TRAINER.format(compile="", body=" " * 12 + "loss, acc = self._loss_and_accuracy(y, pred)",
                         helpers="", arguments='optimizer="sgd"').replace("\n\nx = tf.random", helpers + "\n\nx = tf.random")
    result = convert_source(src.encode(), "trainer.py", backend="tf-distribute")
    assert _divided_once(result), result.data.decode()


@pytest.mark.parametrize("init,construction,divided", [
    ('super().__init__(reduction="none")', "Consistency()", True),  # its own reduction: none
    ("super().__init__()", "Consistency()", False),                 # Keras's default: a mean, divided
    ("super().__init__(**kwargs)", 'Consistency(reduction="sum")', True),
    ("super().__init__(**kwargs)", "Consistency()", False),
])
def test_a_loss_class_of_the_module_has_the_reduction_its_init_gives(init, construction, divided):
    helpers = f'''

class Consistency(keras.losses.Loss):
    def __init__(self, **kwargs):
        {init}

    def call(self, y_true, y_pred):
        return tf.reduce_mean(tf.square(y_true - y_pred), axis=-1)
'''
    # a Loss reducing to nothing is averaged by the step; a sum is divided by the batch
    body = {"none": "loss = tf.reduce_mean(self.consistency(y, pred))", "sum": "loss = self.consistency(y, pred) / 16.0",
            "mean": "loss = self.consistency(y, pred)"}["none" if "none" in init else "sum" if "sum" in construction
                                                       else "mean"]
    src, _ = _trainer(body, helpers=helpers)
    src = src.replace("        self.tracker = ", f"        self.consistency = {construction}\n        self.tracker = ")
    result = convert_source(src.encode(), "trainer.py", backend="tf-distribute")
    assert (_divided_once(result) if divided else _kept(result)), result.data.decode()


def test_a_loss_made_of_divided_terms_is_kept_and_the_terms_reported_as_means():
    """``loss = (student_loss + distill_loss) / 2`` of a distiller, each term
    reported by a metric: the terms stay divided where the loss is made of
    them, and are multiplied back where they are reported."""
    body = '''
    student_loss = self.loss_fn(y, pred)
    distill_loss = self.loss_fn(y, 2.0 * pred)
    loss = (student_loss + distill_loss) / 2
'''
    src, result = _trainer(body, HANDED, arguments='optimizer="sgd", loss_fn=keras.losses.MeanSquaredError()')
    src = src.replace("        self.tracker.update_state(loss)\n",
                      "        self.tracker.update_state(loss)\n        self.tracker.update_state(student_loss)\n")
    result = convert_source(src.encode(), "trainer.py", backend="tf-distribute")
    assert result.status == "converted", result.error
    text = result.data.decode()
    assert "loss = (student_loss + distill_loss) / 2\n" in text
    assert "student_loss = student_loss *" not in text
    assert "self.tracker.update_state(student_loss * strategy.num_replicas_in_sync)" in text
    assert "/ strategy.num_replicas_in_sync" not in text


def test_gradients_repacked_into_pairs_by_loops_reach_the_optimizer():
    """``for grad, var in zip(grads, groups): for g, v in zip(grad, var):
    pairs.append((g, v))`` then ``apply_gradients(pairs)`` (a ShiftViT)."""
    src, result = _trainer("loss = tf.reduce_mean(tf.square(pred - y))")
    src = src.replace(
        "        self.optimizer.apply_gradients(zip(grads, self.net.trainable_variables))\n",
        "        pairs = []\n        for grad, var in zip([grads], [self.net.trainable_variables]):\n"
        "            for g, v in zip(grad, var):\n                pairs.append((g, v))\n"
        "        self.optimizer.apply_gradients(pairs)\n")
    result = convert_source(src.encode(), "trainer.py", backend="tf-distribute")
    assert _divided_once(result), result.error
