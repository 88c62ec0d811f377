"""Attributes a constructor makes from its keywords (``self.__dict__.update(kwargs)``, the
tensorflow-2-generative-models notebooks' GANs and VAEs) are bindings: ``self.gen_optimizer`` is
the optimizer ``GAN(gen_optimizer=Adam(...))`` hands in, so the tape whose gradients a method
returns and the model's own ``apply_gradients`` method applies is a training loop (it was "no
training loop" on both engines, seen in a held-out set), its rates scaled, no warning. The
fixture gradient_tape/gan_attributes_from_kwargs has the whole conversion."""
from pathlib import Path

import pytest

from tfdist.api import convert_source

FIXTURE = Path(__file__).resolve().parent / "fixtures" / "gradient_tape" / "gan_attributes_from_kwargs" / "input.py"
SOURCE = FIXTURE.read_text()


def _said(result):
    return sorted((f.rule, f.level) for f in list(result.changes) + list(result.warnings))


@pytest.mark.parametrize("backend", ["horovod", "tf-distribute"])
@pytest.mark.parametrize("spelling", ["self.__dict__.update(kwargs)", "vars(self).update(kwargs)"])
def test_keywords_made_attributes_carry_the_optimizers(backend, spelling):
    result = convert_source(SOURCE.replace("self.__dict__.update(kwargs)", spelling), "gan.py", backend=backend)
    assert result.status == "converted" and result.pattern == "GradientTape", result.error
    scaled = sorted(f.line for f in result.changes if f.rule == "lr-scaling")
    assert scaled == [43, 44] and not result.warnings, (scaled, [w.message for w in result.warnings])


def test_a_dict_that_is_no_keyword_parameter_is_not_followed():
    """``self.__dict__.update(settings)`` of a dict built in the method: no keyword of a caller
    is its attribute -- the optimizer is not found, nothing is guessed."""
    source = SOURCE.replace("def __init__(self, **kwargs):", "def __init__(self, **kwargs):\n        settings = {}") \
        .replace("self.__dict__.update(kwargs)", "self.__dict__.update(settings)")
    result = convert_source(source, "gan.py", backend="tf-distribute")
    assert not (result.status == "converted" and any(f.rule == "lr-scaling" for f in result.changes)), _said(result)


def test_the_model_s_own_apply_gradients_is_no_optimizer_step():
    """``self.apply_gradients(g, d)`` runs the GAN's method, which steps its two optimizers:
    no learning rate is asked of ``self`` ("where self is created is unknown")."""
    result = convert_source(SOURCE, "gan.py", backend="tf-distribute")
    assert not any("where self is created" in w.message for w in result.warnings)
    assert [f.line for f in result.changes if f.rule == "lr-scaling"] == [43, 44]
