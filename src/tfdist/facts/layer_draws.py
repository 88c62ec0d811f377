"""Unseeded Keras 3 random draws in a layer's or model's methods.

Keras 3 draws without a seed (``keras.random.uniform(shape)``) from one
global SeedGenerator, created on first use and kept per thread. Under a
tf.distribute strategy that first use is inside the replicated step, once
per replica: the step fails ("tf.function only supports singleton
tf.Variables created on the first call"; measured on TF 2.21 / Keras 3.15,
MirroredStrategy over 2 logical CPUs and MultiWorkerMirroredStrategy on 2
workers). A SeedGenerator the layer owns -- what Keras's own Dropout and
noise layers hold -- is made with the layer, in the strategy's scope, and
the draw trains (each replica then draws what the others draw, as Keras's
own layers do under a strategy).
"""
from __future__ import annotations

from dataclasses import dataclass
from typing import List, Optional

import libcst as cst
from .. import apis
from ..engine import analysis as A
from ..engine.memo import fact
from ..engine.scopes import walk
from .syntax import find_arg


@dataclass(frozen=True)
class LayerDraw:
    call: cst.Call            # the draw
    cls: cst.ClassDef         # the layer or model class whose method draws
    method: cst.FunctionDef   # that method
    seed: Optional[cst.Arg]   # a ``seed=None`` given (replaced), else None (added)


@fact
def unseeded_layer_draws(a: A.Analysis) -> List[LayerDraw]:
    """keras.random draws without a seed (or with ``seed=None``) in methods
    of Keras layer / model subclasses of this module, source order."""
    out = []
    for call in a.calls:
        found = a.is_name(call, set(apis.KERAS3_RANDOM_DRAWS))
        if not found:
            continue
        seed = find_arg(call, "seed", apis.KERAS3_RANDOM_DRAWS[found])
        if seed is not None and not (isinstance(seed.value, cst.Name) and seed.value.value == "None"):
            continue
        method = a.enclosing_function(call)
        cls = a.method_owner(method) if method is not None else None
        if cls is None or not method.params.params or not (
                a.class_fact(cls, set()).kinds & {A.MODEL, A.MODULE}):
            continue
        out.append(LayerDraw(call, cls, method, seed))
    return out


@fact
def super_init_statement(a: A.Analysis, cls: cst.ClassDef) -> Optional[cst.BaseStatement]:
    """The statement of cls's own ``__init__`` body calling ``super().__init__(...)``
    (or ``Base.__init__(self, ...)``), at its top level; else None."""
    inits = [s for s in cls.body.body if isinstance(s, cst.FunctionDef) and s.name.value == "__init__"]
    if not inits or not isinstance(inits[0].body, cst.IndentedBlock):
        return None
    for stmt in inits[0].body.body:
        if isinstance(stmt, cst.SimpleStatementLine) and any(
                isinstance(n, cst.Call) and isinstance(n.func, cst.Attribute) and n.func.attr.value == "__init__"
                for n in walk(stmt)):
            return stmt
    return None


def attribute_used(cls: cst.ClassDef, attr: str) -> bool:
    """Some ``x.<attr>`` appears in the class."""
    return any(isinstance(n, cst.Attribute) and n.attr.value == attr for n in walk(cls))
