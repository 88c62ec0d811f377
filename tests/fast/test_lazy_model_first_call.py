"""A model that makes its variables at its first call (a subclass), made and then called once on its
own before training (``fake = generator(noise)``, a held-out GAN notebook): made and first called
in the scope -- outside it, the first call made the variables there and the first step stopped
("colocate_vars_with must only be passed a variable created in this tf.distribute.Strategy.scope()",
seen on 1 x 2 devices). A first call inside a function definition or the training loop is not
pulled into the scope."""
from pathlib import Path

from tfdist.api import convert_source

SCRIPT = (Path(__file__).resolve().parents[1] / "slow" / "lazy_model" / "first_call_outside.py").read_text()


def test_the_first_call_runs_in_the_scope():
    result = convert_source(SCRIPT, "gan.py", backend="tf-distribute")
    assert result.status == "converted", result.error
    assert "with strategy.scope():\n    generator = Generator()\n\n    fake = generator(" in result.code, result.code


def test_a_model_built_when_made_is_left_as_before():
    """A Sequential given its input makes its variables when made: its first call stays outside."""
    source = SCRIPT.replace("generator = Generator()", "generator = tf.keras.Sequential([tf.keras.Input((4,)), "
                                                          "tf.keras.layers.Dense(8)])")
    result = convert_source(source, "gan.py", backend="tf-distribute")
    assert "\nfake = generator(" in result.code, result.code


def test_a_first_call_in_a_definition_or_the_loop_is_not_pulled_in():
    source = SCRIPT.replace("fake = generator(np.random.uniform(-1, 1, size=(1, 4)))\nprint(fake.shape)\n", "")
    result = convert_source(source, "gan.py", backend="tf-distribute")
    assert result.status == "converted", result.error
    assert "    @tf.function" not in result.code and "    for epoch in range(3):" not in result.code, result.code
