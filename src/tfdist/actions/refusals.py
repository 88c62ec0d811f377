"""A training pattern an engine cannot run: detected as usual, then refused
with the backend's reason, before anything is written."""
from __future__ import annotations

from typing import List

import libcst as cst
from ..engine import analysis as A
from ..engine.context import Unsupported
from ..engine.rule import Rule
from ..facts import element_shapes
from ..facts import gradient_tapes
from ..facts.syntax import find_passed


class RefusedPattern(Rule):
    """The base of a refusal rule: a subclass sets ``PATTERN`` and ``detect``;
    ``apply`` refuses the file at the first place the pattern was seen."""

    def apply(self, ctx) -> None:
        evidence = list(self.detect(ctx.a))
        if not evidence:
            raise ctx.unsupported(None, ctx.backend.tf1_refusal())
        raise Unsupported(evidence[0].line, ctx.backend.tf1_refusal())


def keras3_imports(a: A.Analysis) -> List[cst.CSTNode]:
    """The ``import keras`` / ``from keras... import`` statements (Keras 3)."""
    out = []
    for node in a.imports:
        if isinstance(node, cst.Import):
            roots = [a.code(alias.name).split(".")[0] for alias in node.names]
        elif isinstance(node, cst.ImportFrom) and node.module is not None and not node.relative:
            roots = [a.code(node.module).split(".")[0]]
        else:
            continue
        if "keras" in roots:
            out.append(node)
    return out


def refuse_keras3(ctx) -> None:
    """A Keras 3 script under a strategy Keras 3 does not support: refused with the upstream reason and
    the edit (tf-keras), before anything is written."""
    a = ctx.a
    found = keras3_imports(a)
    where = "; ".join(f"line {a.line(n)}: {a.code(n).strip()}" for n in found) or "its keras calls"
    first = found[0] if found else None
    raise ctx.unsupported(first, (
        f"{ctx.backend.keras3_refusal()}. This script uses Keras 3 ({where}): write `import tf_keras as keras` "
        "there (`from tf_keras import ...` for `from keras import ...`), or `from tensorflow import keras` with "
        "TF_USE_LEGACY_KERAS=1 set before TensorFlow is imported (TensorFlow >= 2.16 with tf-keras installed), "
        "then convert again"))


def refuse_tf1_optimizer_tapes(ctx) -> None:
    """A tape loop whose gradients a TF1 optimizer applies in eager TF2 code
    (``tf.compat.v1.train.MomentumOptimizer``): refused with the edit, rather
    than left as a file with no training (neither engine's tape conversion
    knows a TF1 optimizer's state outside a Session)."""
    a = ctx.a
    found = gradient_tapes.tf1_optimizer_tapes(a)
    if not found:
        return
    w, apply = found[0]
    raise ctx.unsupported(apply, (
        f"{a.code(apply.func)} (line {a.line(apply)}) applies the gradients of the GradientTape at line "
        f"{a.line(w)} with a TF1 optimizer (tf.compat.v1.train / tf.train) in eager TF2 code: tfdist converts tape "
        "loops whose optimizer is a Keras optimizer and does not guess at a TF1 optimizer's slots and steps "
        "outside a Session: nothing converted. Build the Keras optimizer of the same algorithm where this one is "
        "made (tf.keras.optimizers.SGD(learning_rate, momentum=m) for MomentumOptimizer, Adam for AdamOptimizer, "
        "RMSprop for RMSPropOptimizer; drop apply_gradients' global_step argument) and convert again"))


def refuse_unbatched_components(ctx, datasets: List[cst.BaseExpression]) -> None:
    """A dataset a strategy will distribute whose elements hold a scalar constant beside the batch
    (facts/element_shapes): tf.distribute splits every component of a global batch between the
    replicas along its first dimension and stops at the first step on a scalar. No edit is exact (a
    loss may read the scalar as it is), so the file is refused with the edit to make."""
    a = ctx.a
    for ds in datasets:
        for leaf in element_shapes.unbatched_components(a, ds):
            raise ctx.unsupported(leaf, ctx.say(
                "{leaf} (line {line}) is a scalar the dataset's map puts beside each batch (after .batch()): "
                "{engine} splits every component of a global batch between the replicas along its first "
                "dimension, and a scalar has none (the converted script would stop at its first step). Give it a "
                "batch dimension in the map (e.g. tf.zeros_like(<a batch component>[:, :1]) for a dummy target "
                "whose loss ignores it){alternative}", leaf=a.code(leaf),
                line=str(a.line(leaf))))


def refuse_unbatched_fit_data(ctx, fit: cst.Call) -> None:
    """:func:`refuse_unbatched_components` for the datasets a fit() trains and validates on."""
    passed = (find_passed(ctx.a, fit, "x", 0), find_passed(ctx.a, fit, "validation_data"))
    refuse_unbatched_components(ctx, [p.value for p in passed if p is not None])
