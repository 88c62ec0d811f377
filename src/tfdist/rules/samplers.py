"""Samplers: objects that hand out a new batch on each call (TF1 tutorial
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

from dataclasses import dataclass
from typing import List, Optional

import libcst as cst

from .. import apis
from ..engine import analysis as A
from ..engine import dataflow
from ..engine.scopes import walk
from . import data_division
from .common import method_name, receiver

GLOBAL_STREAM = "global"  # draws from NumPy's global generator
FIXED_ORDER = "fixed"  # no randomness seen: every rank would read the same batches
UNKNOWN = "unknown"


@dataclass
class Sampler:
    call: cst.Call  # the next_batch(...) call
    stream: str


def _draws_from_global_numpy(a: A.Analysis, fdef: cst.FunctionDef) -> Optional[bool]:
    """True: the method draws from NumPy's global generator; False: no
    random draw at all; None: it draws from something else (its own
    RandomState, Python's random...)."""
    other = False
    for n in walk(fdef.body):
        if isinstance(n, cst.Call):
            names = a.names(n)
            if names & apis.NUMPY_GLOBAL_RANDOM:
                return True
            if any(x.startswith(("numpy.random.", "random.")) for x in names):
                other = True
            if isinstance(n.func, cst.Attribute) and n.func.attr.value in ("shuffle", "permutation", "choice", "randint") \
                    and not names:
                other = True
    return None if other else False


def classify(a: A.Analysis, call: cst.Call) -> Optional[Sampler]:
    """A ``next_batch`` call and where its randomness comes from, or None if it is no sampler."""
    if method_name(call) not in apis.SAMPLER_METHODS:
        return None
    recv = receiver(call)
    # mnist.train.next_batch(n): mnist from read_data_sets()
    if isinstance(recv, cst.Attribute) and recv.attr.value in apis.TF1_TUTORIAL_SPLITS \
            and a.is_kind(recv.value, A.TUTORIAL_DATASETS):
        return Sampler(call, GLOBAL_STREAM)
    methods = a.methods_called(call)
    if methods:
        kinds = {_draws_from_global_numpy(a, f) for f in methods}
        if kinds == {True}:
            return Sampler(call, GLOBAL_STREAM)
        if kinds == {False}:
            return Sampler(call, FIXED_ORDER)
    return Sampler(call, UNKNOWN)


def in_loop(a: A.Analysis, loop) -> List[Sampler]:
    out = []
    for n in walk(loop.body):
        if isinstance(n, cst.Call):
            s = classify(a, n)
            if s is not None:
                out.append(s)
    return out


def _outermost_loop(a: A.Analysis, node):
    f = a.enclosing_function(node)
    found = None
    for anc in a.ancestors(node):
        if anc is f:
            break
        if isinstance(anc, (cst.For, cst.While)):
            found = anc
    return found


def draw_per_rank(ctx, samplers: List[Sampler]) -> bool:
    """Give each rank its own stream for these samplers. False (and a
    warning naming the edit) when one cannot be handled."""
    a = ctx.a
    ok = True
    seeded = set()
    for s in samplers:
        what = a.code(s.call.func)
        if s.stream != GLOBAL_STREAM:
            reason = ("it reads its data in a fixed order, so every rank would get the same batches"
                      if s.stream == FIXED_ORDER else "tfdist cannot see where its randomness comes from")
            ctx.warn(s.call, data_division.RULE,
                     f"{what}() hands out batches tfdist cannot divide ({reason}): give each rank a disjoint "
                     f"share of its data (slice its arrays with [hvd.rank()::hvd.size()]) or a stream seeded "
                     f"with hvd.rank()")
            ok = False
            continue
        loop = _outermost_loop(a, s.call)
        stmt = a.statement_of(loop) if loop is not None else None
        if stmt is None:
            ctx.warn(s.call, data_division.RULE, f"{what}() is not called in a loop tfdist can see: seed NumPy "
                                                 f"with hvd.rank() before the training loop by hand")
            ok = False
            continue
        if id(stmt) in seeded:
            continue
        seeded.add(id(stmt))
        np_name = ctx.imports.require("numpy", "np")
        seed = ctx.backend.seed_per_rank(f"{np_name}.random.randint(2 ** 31 - 1)")
        ctx.plan.insert_before(stmt, ctx.stmts(
            f"{np_name}.random.seed({seed})",
            comment="Horovod: each rank draws its own stream of batches (NumPy seeded by rank)."))
        ctx.change(s.call, data_division.RULE,
                   f"{what}() draws a different stream of batches on each rank (NumPy re-seeded by rank before "
                   f"the loop at line {a.line(loop)}); each rank runs 1/size of the steps")
    return ok


def fed_by_sampler(a: A.Analysis, value, loop) -> Optional[List[Sampler]]:
    """The samplers a fed value comes from: ``batch_x`` with ``batch_x,
    batch_y = mnist.train.next_batch(n)`` (or ``batch[0]`` with ``batch =
    ...``) bound in the loop. None if the value is not (only) from samplers."""
    while isinstance(value, cst.Subscript):
        value = value.value
    if not isinstance(value, cst.Name):
        return None
    bound = a.assigned_values(value)
    if not bound:
        return None
    out = []
    for origin, v in bound:
        node = origin
        # tuple targets: find the assignment's value
        if v is None:
            stmt = dataflow.tuple_binding_statement(a, value)
            v = dataflow.value_of_statement(stmt) if stmt is not None else None
        if not isinstance(v, cst.Call) or not dataflow.is_inside(a, node, loop):
            return None
        s = classify(a, v)
        if s is None:
            return None
        out.append(s)
    return out
