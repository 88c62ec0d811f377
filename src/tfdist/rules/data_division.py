"""Dividing the work: each rank reads 1/size of the data, or runs 1/size of
the steps, so one epoch still covers the data set once.

Sharding happens right at the tf.data source (before any shuffle or random
map, so the ranks' shards are disjoint) and gives every rank exactly
``len // size`` elements, so every rank runs the same number of batches:
ranks that disagree on the number of steps deadlock in an allreduce.
"""
from __future__ import annotations

from typing import List

import libcst as cst

from .. import apis
from .common import source

RULE = "data-division"


def shard_dataset(ctx, dataset: cst.BaseExpression, what: str) -> bool:
    """Shard every tf.data source ``dataset`` is built from. False if none found."""
    sources = ctx.a.dataset_sources(dataset)
    if not sources:
        return False
    for src in sources:
        if src in ctx.sharded:
            continue
        ctx.sharded.add(src)
        parent = ctx.a.parent(src)
        if isinstance(parent, cst.Attribute) and parent.attr.value == "shard":
            ctx.warn(src, RULE, "the dataset is already sharded: check it is sharded by Horovod rank")
            continue
        if ctx.a.is_name(src, apis.FILE_LEVEL_SOURCES):
            new = ctx.expr(ctx.backend.shard_files(source(ctx.module, src)))
            ctx.plan.replace(src, lambda old, new=new: new)
            ctx.change(src, RULE, f"{what}: files sharded by rank")
            ctx.warn(src, RULE, "sharded by file: each rank must get the same number of records, or a rank will wait in an allreduce (shard records instead if the files differ in size)")
            continue
        if ctx.a.is_name(src, apis.KNOWN_SIZE_SOURCES):
            template = ctx.backend.shard_dataset_known_size(source(ctx.module, src))
        else:
            template = ctx.backend.shard_dataset(source(ctx.module, src))
        new = ctx.expr(template)
        ctx.plan.replace(src, lambda old, new=new: new)
        ctx.change(src, RULE, f"{what}: dataset sharded by rank, equal share per rank")
    return True


def shard_arrays(ctx, values: List[cst.BaseExpression], what: str) -> bool:
    """Slice in-memory arrays (NumPy, lists, tensors) given to fit()."""
    for v in values:
        if not isinstance(v, (cst.Name, cst.Attribute, cst.Subscript)):
            ctx.warn(v, RULE, f"{what}: cannot slice {ctx.a.code(v)} safely; give each rank 1/size of the samples by hand")
            return False
    for v in values:
        new = ctx.expr(ctx.backend.shard_array(source(ctx.module, v)))
        ctx.plan.replace(v, lambda old, new=new: new)
        ctx.change(v, RULE, f"{what}: {ctx.a.code(v)} sliced by rank, equal share per rank")
    return True


def divide(ctx, value: cst.BaseExpression, what: str) -> None:
    new = ctx.expr(ctx.backend.divide_count(source(ctx.module, value)))
    ctx.plan.replace(value, lambda old: new)
    ctx.change(value, RULE, f"{what} divided by the number of processes")
