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

from typing import FrozenSet, List

import libcst as cst
from .. import apis
from ..engine import analysis as A
from ..engine import dataflow
from ..engine.memo import fact
from ..engine.scopes import walk
from . import step_counts
from . import tape_rows
from .syntax import calls_in, names_a_field

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
    if first is None:
        return False
    last = max(i for i, s in enumerate(body) if in_step(s))
    step = body[first:last + 1]  # from the first tape to the last optimizer step (the gradients between)
    if not all(_bookkeeping(s) for s in body[:first]):
        return False  # statements before the step (a batch cut, a draw): not the whole data
    if any(dataflow.reaches(a, s, lambda n: _drifts(a, n, loop, step)) for s in step):
        return False  # the step draws, or reads the step number or a cursor: not the same data each step
    return not any(isinstance(n, cst.Call) and isinstance(n.func, cst.Name) and n.func.value == "next"
                   for s in body for n in walk(s))


def _bookkeeping(stmt) -> bool:
    """A statement before the step that cannot make its data: a count or a
    time kept without calling anything (``step += 1``), or a print (whether
    the step reads what it binds is _drifts's question)."""
    if not isinstance(stmt, cst.SimpleStatementLine):
        return False
    for small in stmt.body:
        if isinstance(small, cst.Expr) and isinstance(small.value, cst.Call) \
                and isinstance(small.value.func, cst.Name) and small.value.func.value == "print":
            continue
        if not (isinstance(small, (cst.Assign, cst.AugAssign, cst.AnnAssign)) and small.value is not None
                and not any(isinstance(n, cst.Call) for n in walk(small.value))):
            return False
    return True


def _drifts(a: A.Analysis, node, loop, step) -> bool:
    """Does node (a statement of the step, or the body of a function it
    calls) draw at random, or read a name the loop binds outside the step
    (its counter, a cursor moved each pass): data that changes from step to
    step?"""
    for n in walk(node):
        if isinstance(n, cst.Call) and any(x.startswith(apis.RANDOM_MODULE_PREFIXES) for x in a.names(n)):
            return True
        if isinstance(n, cst.Name) and not names_a_field(a, n) and any(
                o is not None and (o is loop or dataflow.is_inside(a, o, loop))
                and not any(o is s or dataflow.is_inside(a, o, s) for s in step)
                for o, _ in a.assigned_values(n)):
            return True
    return False


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


@fact
def training_loops(a: A.Analysis, applies: FrozenSet[int], within_step: FrozenSet[int] = frozenset()) -> List:
    """The innermost loops running optimizer steps (``applies``: their ids; ``within_step``:
    ids of loops that are part of a step, over its gradients)."""
    trains = lambda node: tape_rows.runs_optimizer_step(a, node, applies)  # noqa: E731
    # a loop over a tuple written out applies each of a fixed set within a step
    loops = [l for l in list(a.for_loops) + list(a.while_loops) if trains(l.body)
             and not tape_rows.over_a_display(l) and id(l) not in within_step]
    # ``for _ in range(k):`` around the updates of a step function that a loop over data (no
    # range) hands each element: k updates on the step's one batch, part of the step (a GAN's
    # critic iterations)
    loops = [l for l in loops if not (_repeats_its_body(a, l) and any(
        o is not l and _hands_its_elements(a, o, l) for o in loops))]
    return [l for l in loops if not any(o is not l and dataflow.is_inside(a, o, l.body) for o in loops)
            and not any(o is not l and _inside_called(a, o, l) for o in loops)]


def _hands_its_elements(a: A.Analysis, outer, inner) -> bool:
    """``for batch in data: step(..., batch)``: outer iterates something other than a range and
    passes what it binds to a call of the function holding ``inner``."""
    if not isinstance(outer, cst.For) or step_counts.is_range(a, outer.iter):
        return False
    fdef = a.enclosing_function(inner)
    bound = {n.value for n in walk(outer.target) if isinstance(n, cst.Name)}
    return fdef is not None and any(
        fdef in dataflow.callees(a, c) and any(isinstance(n, cst.Name) and n.value in bound
                                               for arg in c.args for n in walk(arg.value))
        for c in calls_in(outer.body))


def _repeats_its_body(a: A.Analysis, loop) -> bool:
    """``for _ in range(k):`` whose body never reads what it counts nor draws a batch (``next()``):
    each pass works on what the function was given."""
    if not (isinstance(loop, cst.For) and step_counts.is_range(a, loop.iter)):
        return False
    counted = {n.value for n in walk(loop.target) if isinstance(n, cst.Name)}
    return not any(isinstance(n, cst.Name) and n.value in counted for n in walk(loop.body)) and not any(
        isinstance(c.func, cst.Name) and c.func.value == "next" for c in calls_in(loop.body))


@fact
def whole_data_loops(a: A.Analysis, applies: FrozenSet[int], within_step: FrozenSet[int] = frozenset()) -> List:
    """Those of training_loops whose every step trains on the whole data."""
    return [loop for loop in training_loops(a, applies, within_step) if whole_data_loop(a, loop, applies)]


def _inside_called(a: A.Analysis, node, loop, depth: int = 3) -> bool:
    """``node`` sits in a function of this module that ``loop`` calls, or
    that one calls (``for epoch in range(n): train(epoch)`` around the
    batch loop in ``def train``): the loop is an outer loop, not the step loop."""
    fdef = a.enclosing_function(node)
    if fdef is None:
        return False
    seen, frontier = set(), [loop.body]
    for _ in range(depth):
        called = [f for body in frontier for c in calls_in(body) for f in dataflow.callees(a, c)
                  if id(f) not in seen]
        if any(f is fdef or dataflow.is_inside(a, fdef, f) for f in called):
            return True
        seen |= {id(f) for f in called}
        frontier = [f.body for f in called]
    return False
