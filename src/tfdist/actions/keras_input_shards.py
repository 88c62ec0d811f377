"""Dividing Keras inputs that are not tf.data: Sequences and image flows.

Dividing the work for Keras inputs that are not tf.data: an
ImageDataGenerator flow (arrays sliced by rank, or one shuffled stream per
rank with the steps divided), a keras.utils.Sequence (read through a
rank-strided wrapper), and the step counts fit() is given for them.

Part of the data-division rule: it shares that rule's id and its
per-conversion state (what is already divided), so the two never divide a
source twice.
"""
from __future__ import annotations

from typing import Optional
import libcst as cst
from .. import apis
from ..engine import analysis as A
from ..engine import dataflow
from .sharding import shard_arrays
from ..facts.keras_inputs import draws_elsewhere_than_numpy, image_flow, sequence_classes
from ..facts.shard_points import RULE, division_state, sharded_state, wrapped_state
from ..facts.syntax import find_arg, source


def shard_image_flow(ctx, expr, what: str) -> Optional[str]:
    """Divide an ImageDataGenerator flow. Returns 'sliced' (arrays sliced by
    rank: disjoint shares), 'streams' (one shuffled stream per rank: the
    caller must divide the steps) or None (not a flow)."""
    a = ctx.a
    kind, call = image_flow(a, expr)
    if kind is None:
        return None
    if call in sharded_state(ctx):
        return "sliced" if kind == "array" else "streams"
    sharded_state(ctx).add(call)
    if kind == "array":
        pos = apis.IMAGE_GENERATOR_ARRAY_FLOWS[call.func.attr.value]
        values = [arg.value for key in ("x", "y", "sample_weight")
                  for arg in [find_arg(call, key, pos[key])] if arg is not None
                  and not (isinstance(arg.value, cst.Name) and arg.value.value == "None")]
        if values and all(isinstance(v, (cst.Name, cst.Attribute, cst.Subscript)) for v in values):
            shard_arrays(ctx, values, what)
            return "sliced"
        # Arrays built inline: one random stream per rank, the steps divided.
        kind = "files"
    seed = find_arg(call, "seed")
    if seed is not None:
        new = ctx.expr(ctx.backend.seed_per_rank(source(ctx.module, seed.value)))
        ctx.plan.replace(seed.value, lambda old, new=new: new)
        ctx.change(seed.value, RULE, f"{what}: a different shuffle seed per rank (the same seed would give every rank the same batches)")
    return "streams"


def wrap_sequence(ctx, fit_call: cst.Call, expr, what: str) -> bool:
    """A keras.utils.Sequence given to fit(): rank r reads its batches r,
    r + size, ... through a wrapper class written once into the module."""
    a = ctx.a
    if expr in wrapped_state(ctx):
        return True
    wrapped_state(ctx).add(expr)
    name = division_state(ctx).get("rank_sequence_class")
    if name is None:
        keras_base = "{keras}.utils.Sequence" if ctx.facts.get("keras_flavor") == "keras" else "{tf}.keras.utils.Sequence"
        name = ctx.imports.free_name("RankShardedSequence")
        division_state(ctx)["rank_sequence_class"] = name
        anchor = dataflow.module_statement(a, fit_call)
        classes = [c for c in a.classdefs if A.SEQUENCE in a.classes.get(
            next(iter(a.qualified(c.name)), c.name.value), A.ClassFact("", set(), [])).kinds]
        top = [c for c in classes if a.parent(c) is a.module]
        body = ctx.stmts(ctx.backend.rank_strided_sequence(name, keras_base),
                         comment=ctx.say("{engine}: every rank reads a disjoint, equal share of a Sequence's batches."))
        blank = [cst.EmptyLine(), cst.EmptyLine()]
        body[0] = body[0].with_changes(leading_lines=[*blank, *body[0].leading_lines])
        if top:
            ctx.plan.insert_after(top[-1], body)
        else:
            ctx.plan.insert_before(anchor, body)
    ctx.plan.replace(expr, lambda upd: ctx.expr(f"{name}({{inner}})", inner=ctx.module.code_for_node(upd)))
    ctx.change(expr, RULE, f"{what}: {a.code(expr)} read through {name}: rank r gets batches r, r + size, ... (disjoint, len // size per rank)")
    for c in sequence_classes(a, expr):
        ends = [s for s in c.body.body if isinstance(s, cst.FunctionDef) and s.name.value == "on_epoch_end"]
        if any(draws_elsewhere_than_numpy(a, f) for f in ends):
            ctx.warn(c, RULE, f"{c.name.value}.on_epoch_end may reorder the batches with a random generator other "
                              f"than NumPy's global one (which the wrapper seeds alike on every rank each epoch): "
                              f"the ranks' shares are disjoint only if it orders them identically on every rank "
                              f"(seed that generator with the same value on every rank, e.g. the epoch number)")
    return True
