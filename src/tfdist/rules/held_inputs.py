"""Models fitted on one thing and called on another (tf.distribute).

A Keras model whose ``train_step`` calls the model only on tensors it holds
-- a graph network fed node indices, ``self([self.node_states,
self.edges])`` -- trains on one process, where Keras builds the model when
the step is first traced. Under a strategy Keras 3's fit() builds the model,
its compiled loss and metrics first, by calling the model on fit's batch
(facts/model_builds.py): the indices, which its call() cannot take. fit()
stops ("Unable to automatically build the model").

tf-keras builds as one process does. A script on tf.keras switches to it
wherever it is installed (not only on several workers); a script on
standalone Keras 3 (``import keras``) is refused, with the edit.
"""
from __future__ import annotations

from .. import apis
from ..engine.rule import Rule, register
from ..facts import keras_models
from ..facts import model_builds
from ..facts import replica_state
from ..facts.syntax import receiver

REASON = "Keras 3 cannot build {cls} from fit()'s batch under a strategy (its train_step calls it on {inputs})"


def _held(a):
    """(fit call, class, the train_step's calls of the model) for each fit()
    of a model whose step calls it only on what it holds."""
    out = []
    for call in keras_models.model_calls(a, apis.KERAS_FIT_METHODS):
        classes = a.instance_classes(receiver(call)) if receiver(call) is not None else []
        if len(classes) != 1 or not a.class_methods(classes[0], "call"):
            continue
        held = model_builds.held_input_calls(a, classes[0])
        if held:
            out.append((call, classes[0], held))
    return out


@register
class HeldInputModels(Rule):
    id = "held-input-models"
    description = ("A model whose train_step calls it on tensors it holds, not on fit()'s batch, which Keras 3 "
                   "cannot build under a strategy: tf-keras wherever installed, else refused.")
    engines = ("tf-distribute",)
    kinds = (replica_state.RULE,)
    refuses = "an `import keras` (Keras 3) model whose train_step calls it on tensors it holds, not on fit()'s batch"
    example = "keras/held_input_model"
    order = 57

    def prepare(self, ctx) -> None:
        a = ctx.a
        found = ctx.state("held_inputs.found", list)
        found.extend(_held(a))  # apply() reports the same fits
        if not found:
            return
        call, cls, held = found[0]
        inputs = ", ".join(a.code(arg.value) for arg in held[0].args)
        reason = REASON.format(cls=cls.name.value, inputs=inputs)
        if ctx.facts.get("keras_flavor") == "keras":
            raise ctx.unsupported(call, ctx.say(
                "{model}.fit() (line {line}): {cls}.train_step (line {step}) calls the model on {inputs}, not on "
                "the batch fit() feeds it. Under a strategy Keras 3 builds the model, its compiled loss and metrics "
                "by calling it on fit()'s first batch, which {cls}.call() cannot take, so fit() would stop "
                "(\"Unable to automatically build the model\"). Not converted: run it on tf-keras (`import tf_keras "
                "as keras`, which builds it as one process does), or give call() what fit() feeds",
                model=a.code(receiver(call)), line=str(a.line(call)), cls=cls.name.value,
                step=str(a.line(held[0])), inputs=inputs))
        ctx.facts["tf_keras_everywhere"] = reason

    def apply(self, ctx) -> None:
        for call, cls, held in ctx.state("held_inputs.found", list) if ctx.facts.get("tf_keras_everywhere") else ():
            ctx.change(call, replica_state.RULE, ctx.say(
                "{model}.fit() runs on tf-keras wherever it is installed, on one host too: {reason}",
                model=ctx.a.code(receiver(call)),
                reason=REASON.format(cls=cls.name.value, inputs=", ".join(ctx.a.code(arg.value) for arg in held[0].args))))
