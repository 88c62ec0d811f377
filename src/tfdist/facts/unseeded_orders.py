"""Which data orders are drawn without a seed (each rank would draw its own).

Samplers: objects that hand out a new batch on each call (TF1 tutorial
data sets' ``mnist.train.next_batch(n)``, a user class with a
``next_batch`` drawing from NumPy's global generator).

Their arrays are hidden inside the object, so they cannot be sliced by
rank; instead each rank draws a *different* stream (NumPy's generator
re-seeded by rank right before the training loop, from a value drawn from
the user's own stream, so a seeded script stays reproducible) and runs
1/size of the steps (the step-loop rule). A sampler that walks its data in
a fixed order would hand every rank the same batches: that is reported,
never re-seeded.
"""
from __future__ import annotations

from typing import List
from .. import apis
from ..engine.memo import fact
from ..engine import analysis as A
from .samplers import generator_calls, generator_defs
from . import seeding
from . import shard_points


@fact
def unseeded_orders(a: A.Analysis, expr) -> List[str]:
    """The global generators ("numpy", "random") a generator expr is made
    by reorders its data with, unseeded (``random.shuffle(paths)`` in it or
    in a function of its module it calls): every process then makes its
    own order, and the ranks' every-size-th shares of different orders
    overlap. Empty when it draws no order or seeds the generator itself."""
    out: List[str] = []
    for call in generator_calls(a, expr) or []:
        for owner, fdef in generator_defs(a, call):
            if "numpy" not in out and seeding.draws_unseeded(owner, fdef) \
                    and not shard_points.global_seed_set_before(a, call, apis.NUMPY_GLOBAL_SEED_SETTERS):
                out.append("numpy")
            if "random" not in out and seeding.draws_unseeded_python(owner, fdef) \
                    and not shard_points.global_seed_set_before(a, call, apis.PYTHON_GLOBAL_SEED_SETTERS):
                out.append("random")
    return out
