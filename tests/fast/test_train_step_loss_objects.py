"""tf.keras train_step calling a Keras Loss object with a mean reduction:
tf-keras (which runs fit() on TF_CONFIG workers) refuses that reduction
under a strategy outside compile(). An object built here and used nowhere
but in the step's calls is built with reduction="none" and each call
averaged as the mean reduction is under a strategy; anything else is warned
with the edit (changing the object would change its other uses)."""
import pytest

from tfdist.api import convert_source

GAN = '''import tensorflow as tf


class GAN(tf.keras.Model):
    def __init__(self, discriminator):
        super().__init__()
        self.discriminator = discriminator

    def compile(self, d_optimizer, loss_fn):
        super().compile(COMPILE_ARGS)
        self.d_optimizer = d_optimizer
        self.loss_fn = loss_fn

    def train_step(self, batch):
        labels = tf.ones((tf.shape(batch)[0], 1))
        with tf.GradientTape() as tape:
            d_loss = self.loss_fn(labels, self.discriminator(batch))
        grads = tape.gradient(d_loss, self.discriminator.trainable_weights)
        self.d_optimizer.apply_gradients(zip(grads, self.discriminator.trainable_weights))
        return {"d_loss": d_loss}
EXTRA

gan = GAN(tf.keras.Sequential([tf.keras.layers.Dense(1)]))
gan.compile(d_optimizer=tf.keras.optimizers.SGD(0.01), loss_fn=LOSS)
gan.fit(tf.data.Dataset.from_tensor_slices(tf.ones([64, 4])).batch(8), epochs=2)
'''

WARNED = "a Keras Loss object with a mean reduction called in train_step"


def _convert(compile_args="", extra="", loss="tf.keras.losses.BinaryCrossentropy(from_logits=True)"):
    src = GAN.replace("COMPILE_ARGS", compile_args).replace("EXTRA", extra).replace("LOSS", loss)
    result = convert_source(src.encode(), "gan.py", backend="tf-distribute")
    assert result.status == "converted", result.error
    return result.code, [w.message for w in result.warnings]


@pytest.mark.parametrize("loss, built", [
    ("tf.keras.losses.BinaryCrossentropy(from_logits=True)",
     'tf.keras.losses.BinaryCrossentropy(from_logits=True, reduction="none")'),
    ('tf.keras.losses.BinaryCrossentropy(reduction="sum_over_batch_size")',
     'tf.keras.losses.BinaryCrossentropy(reduction="none")'),
])
def test_a_loss_object_only_the_step_calls_is_reduced_by_the_step(loss, built):
    out, warnings = _convert(loss=loss)
    assert not warnings, warnings
    assert built in out
    assert "d_loss = replica_mean_loss(self.loss_fn(labels, self.discriminator(batch)))" in out
    assert "tf.reduce_sum(values) / tf.cast(tf.size(values), values.dtype) / " \
           "tf.distribute.get_strategy().num_replicas_in_sync" in out


@pytest.mark.parametrize("compile_args, extra, loss", [
    # compile() is handed it too: its compiled loss would change
    ("loss=loss_fn", "", "tf.keras.losses.BinaryCrossentropy(from_logits=True)"),
    # called outside the step as well: its values there would change
    ("", "\n    def test_step(self, batch):\n        return {'d_loss': self.loss_fn(tf.ones((4, 1)), self.discriminator(batch))}\n",
     "tf.keras.losses.BinaryCrossentropy(from_logits=True)"),
    # a positional argument may be the reduction
    ("", "", "tf.keras.losses.BinaryCrossentropy(True)"),
])
def test_a_loss_object_used_elsewhere_is_warned_with_the_edit(compile_args, extra, loss):
    out, warnings = _convert(compile_args, extra, loss)
    assert "replica_mean_loss" not in out and 'reduction="none"' not in out
    assert any(WARNED in w for w in warnings), warnings


def test_keras3_scripts_keep_the_object_as_it_is():
    """import keras: Keras 3 divides the mean reduction itself (no tf-keras on the workers)."""
    src = GAN.replace("import tensorflow as tf", "import keras\nimport tensorflow as tf").replace(
        "tf.keras.", "keras.").replace("COMPILE_ARGS", "").replace("EXTRA", "").replace(
        "LOSS", "keras.losses.BinaryCrossentropy(from_logits=True)")
    result = convert_source(src.encode(), "gan.py", backend="tf-distribute")
    assert result.status == "converted", result.error
    assert "replica_mean_loss" not in result.code and 'reduction="none"' not in result.code
