"""A training pattern an engine cannot run: detected as usual, then refused
with the backend's reason, before anything is written."""
from __future__ import annotations

from typing import List

import libcst as cst
from ..engine import analysis as A
from ..engine.context import Unsupported
from ..engine.rule import Rule
from ..facts import gradient_tapes


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
