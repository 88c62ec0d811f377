"""Dividing the work: each rank reads 1/size of the data, or runs 1/size of
the steps, so one epoch still covers the data set once.

Sharding happens right at the tf.data source (before any shuffle or random
map, so the ranks' shards are disjoint) and gives every rank exactly
``len // size`` elements, so every rank runs the same number of batches:
ranks that disagree on the number of steps deadlock in an allreduce.
"""
from __future__ import annotations

from typing import Optional
import libcst as cst
from .. import apis
from ..engine.scopes import walk
from .shard_points import fit_data_argument
from .syntax import method_name
from . import collectives
from . import dataset_flow


def site_use(a, site: cst.Call, depth: int = 0) -> Optional[str]:
    """What a helper call's dataset is used for: "train" when it reaches
    fit()'s training or validation data, or a loop that trains on it
    (directly or through the name it is bound to; any other use then sees
    the shard too), "other" when every use only evaluates or looks
    (evaluate/predict, a loop that steps no optimizer, list()/print()),
    None when tfdist cannot tell."""
    parent = a.parent(site)
    if isinstance(parent, cst.Assign) and parent.value is site and len(parent.targets) == 1 \
            and isinstance(parent.targets[0].target, cst.Name):
        reads = a.reads_bound_to(parent.targets[0].target.value, site)
    else:
        reads = [site]
    uses = [_read_use(a, r, depth) for r in reads]
    if "train" in uses:
        return "train"
    # a name never read (rebound before any use) does not train either
    return "other" if all(u == "look" for u in uses) else None


def _read_use(a, node: cst.CSTNode, depth: int = 0) -> Optional[str]:
    """"train" (fit()'s data, or iterated by a loop that steps an optimizer
    or runs a collective), "look" (evaluate/predict, a loop that does
    neither, a built-in like list() whose value is dropped) or None."""
    par = a.parent(node)
    if isinstance(par, cst.Arg) and fit_data_argument(a, par):
        return "train"
    child = node
    for anc in a.ancestors(node):
        if isinstance(anc, cst.For) and child is anc.iter:
            free = all(collectives.collective_free(a, c) for c in walk(anc.body) if isinstance(c, cst.Call))
            return "look" if free else "train"
        if isinstance(anc, cst.CompFor) and child is anc.iter:
            # [lengths for _, lengths, _ in ds.take(1000)]: what the comprehension computes decides
            comp = a.parent(anc)
            reading = {id(c) for c in walk(anc.iter)}
            free = all(collectives.collective_free(a, c) for c in walk(comp) if isinstance(c, cst.Call)
                       and id(c) not in reading)
            return "look" if free else None
        if isinstance(anc, cst.Attribute) and anc.value is child and anc.attr.value in apis.DATASET_METHODS:
            child = anc
        elif isinstance(anc, cst.Call) and anc.func is child:
            child = anc
        elif isinstance(anc, cst.Arg):
            call = a.parent(anc)
            if not isinstance(call, cst.Call):
                return None
            if method_name(call) in apis.KERAS_VERBOSE_METHODS:
                return "look"
            passed = dataset_flow.passed_datasets(a, call) if depth < 4 else None
            if passed and any(p is anc.value for p in passed):
                # crop(train_set): a helper of this module transforming the
                # dataset it is handed; what its result is used for decides
                use = site_use(a, call, depth + 1)
                return "look" if use == "other" else use
            if not a.names(call) & apis.READ_ONLY_BUILTINS:
                return None
            child = anc  # list(ds), enumerate(ds): what they feed decides
        elif isinstance(anc, cst.Call) and isinstance(child, cst.Arg):
            child = anc
        elif isinstance(anc, cst.Expr):
            return "look"  # a value computed and dropped (shown in a notebook)
        else:
            return None
    return None
