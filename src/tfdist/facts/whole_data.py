"""Training loops whose every step trains on the whole data.

A loop counting its steps (``for epoch in range(n)``) whose body begins with
the training step, reads no dataset, iterator or generator, and whose step
reads nothing the loop numbers (not its counter): each step trains on the
same whole arrays or tensors -- a curve fit on a handful of points, a
linear regression on all its rows, a graph network on its one graph.

There is no batch to divide and no step count to cut: under a strategy
every replica runs the step on all of it, each differentiating its share of
the loss (1/N of it), and the optimizer's sum is the whole-data gradient --
the single-process update, exactly, at the single-process learning rate
(the global batch is the original's). What the rows are (samples, nodes of
one graph) does not matter, which cutting them would.
"""
from __future__ import annotations

from typing import FrozenSet

import libcst as cst
from ..engine import analysis as A
from ..engine.memo import fact
from ..engine.scopes import walk
from . import gradient_tapes
from . import step_counts
from . import tape_rows

RULE = "data-division"


@fact
def whole_data_loop(a: A.Analysis, loop, applies: FrozenSet[int]) -> bool:
    """Is ``loop`` (a loop running optimizer steps, ``applies``: their ids) a loop of
    steps each on the whole data?"""
    if not isinstance(loop, cst.For) or not step_counts.is_range(a, _range_of(a, loop.iter)):
        return False
    if _in_model_or_layer(a, loop):
        return False  # a layer's or model's own training (called from its train_step): already on a replica
    if tape_rows.loop_dataset(a, loop.iter)[0] is not None:
        return False
    body = list(loop.body.body)

    def in_step(s) -> bool:  # runs the optimizer step, or a training tape (here or in a function it calls)
        return tape_rows.runs_optimizer_step(a, s, set(applies)) or tape_rows.runs_training_tape(a, s)
    first = next((i for i, s in enumerate(body) if in_step(s)), None)
    if first != 0:
        return False  # statements before the step (a batch cut, a draw): not the whole data
    counter = {n.value for n in walk(loop.target) if isinstance(n, cst.Name)}
    step = [s for s in body if in_step(s)]
    reads = {n.value for s in step for n in walk(s) if isinstance(n, cst.Name)}
    if reads & counter:
        return False  # the step reads the step number (x[i], a rate by step): not the same data each step
    return not any(isinstance(n, cst.Call) and isinstance(n.func, cst.Name) and n.func.value == "next"
                   for s in body for n in walk(s))


def _in_model_or_layer(a: A.Analysis, node) -> bool:
    """node is in a method of a Keras model or layer class (or a tf.Module) of this module."""
    fdef = a.enclosing_function(node)
    while fdef is not None:
        owner = a.method_owner(fdef)
        if owner is not None:
            fact_ = a.classes.get(next(iter(a.qualified(owner.name)), owner.name.value))
            if fact_ is not None and fact_.kinds & {A.MODEL, A.MODULE}:
                return True
        fdef = a.enclosing_function(fdef)
    return False


def _range_of(a: A.Analysis, it):
    """The iterable a loop counts with: ``range(n)`` itself, or what the one binding of the
    name it iterates holds (``epochs = range(10)`` ... ``for epoch in epochs``)."""
    it = step_counts.unwrapped(a, it)
    if isinstance(it, cst.Name):
        bound = a.assigned_values(it)
        if len(bound) == 1 and bound[0][1] is not None:
            return step_counts.unwrapped(a, bound[0][1])
    return it
