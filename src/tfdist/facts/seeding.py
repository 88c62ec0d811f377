"""How the random draws that order the data are seeded, and where a seed is set.

Dividing the work: each rank reads 1/size of the data, or runs 1/size of
the steps, so one epoch still covers the data set once.

Sharding happens right at the tf.data source (before any shuffle or random
map, so the ranks' shards are disjoint) and gives every rank exactly
``len // size`` elements, so every rank runs the same number of batches:
ranks that disagree on the number of steps deadlock in an allreduce.
"""
from __future__ import annotations

from typing import List, Optional
import libcst as cst
from .. import apis
from ..engine.memo import fact
from ..engine import dataflow
from ..engine.scopes import walk
from .shard_points import dataframe_draw, numpy_order_draw
from . import dataset_flow
from . import dataset_splits
from . import external_functions
from . import samplers


@fact
def draws_unseeded(other, fdef: cst.FunctionDef, call: Optional[cst.Call] = None) -> bool:
    """``fdef`` (a function of the module ``other`` analyses) reorders rows
    with NumPy's global generator, or splits them at random without a seed,
    and never seeds NumPy itself -- directly or in a function of its module
    it calls. With ``call``: a seeding by a parameter the call leaves None
    (``np.random.seed(seed)``, seed=None: from the OS, per process) is none."""
    return _draws_unseeded(other, fdef, apis.NUMPY_GLOBAL_SEED_SETTERS, numpy_order_draw, call=call)


@fact
def seeding_parameter(other, fdef: cst.FunctionDef, call: cst.Call, seed_setters) -> Optional[cst.Param]:
    """The parameter of ``fdef`` its seeding call is handed
    (``np.random.seed(seed)``) when ``call`` leaves it None -- the helper
    then seeds from the OS, differently in every process; None otherwise."""
    for c in walk(fdef.body):
        if isinstance(c, cst.Call) and other.names(c) & seed_setters:
            param = _seed_left_none(other, fdef, call, c)
            if param is not None:
                return param
    return None


def _seeds_at(other, fdef: cst.FunctionDef, call: cst.Call, setter: cst.Call) -> bool:
    """The seeding call ``setter`` in ``fdef`` seeds alike when ``call``
    runs it: not skipped by the function's own flag there (``if seed is not
    False:``, seed=False), nor handed a parameter the call leaves None."""
    return samplers.branch_taken(other, fdef, call, setter) is not False \
        and _seed_left_none(other, fdef, call, setter) is None


def _seed_left_none(other, fdef: cst.FunctionDef, call: cst.Call, setter: cst.Call) -> Optional[cst.Param]:
    """The parameter of ``fdef`` the seeding call ``setter`` is handed, when
    ``call`` runs that setter with the parameter None."""
    param = dataset_flow.helper_param(other, fdef, setter.args[0].value) if setter.args else None
    if param is None or samplers.branch_taken(other, fdef, call, setter) is False:
        return None
    value = external_functions.argument_at(other, fdef, call, param)
    return param if isinstance(value, cst.Name) and value.value == "None" else None


@fact
def draws_unseeded_python(other, fdef: cst.FunctionDef) -> bool:
    """The same for Python's global ``random`` (``random.shuffle(paths)``)."""
    return _draws_unseeded(other, fdef, apis.PYTHON_GLOBAL_SEED_SETTERS,
                           lambda o, c: bool(o.names(c) & apis.PYTHON_REORDERING_DRAWS))


def _draws_unseeded(other, fdef: cst.FunctionDef, seed_setters, is_draw, depth: int = 0,
                    call: Optional[cst.Call] = None) -> bool:
    """fdef, or a function of its module it calls (two levels deep), makes
    a draw is_draw recognises, and fdef seeds none of seed_setters (with
    ``call``: none with a seed that call sets)."""
    calls = [c for c in walk(fdef.body) if isinstance(c, cst.Call)]
    if any(other.names(c) & seed_setters and (call is None or _seeds_at(other, fdef, call, c)) for c in calls):
        return False
    for c in calls:
        if is_draw(other, c):
            return True
        if depth < 2 and isinstance(c.func, cst.Name) and any(
                f is not fdef and _draws_unseeded(other, f, seed_setters, is_draw, depth + 1)
                for f in other.local_functions(c.func)):
            return True
    return False


def helper_draws(ctx, call: cst.Call) -> bool:
    """The call runs a function of this module or of another module of the
    project that draws unseeded (see draws_unseeded)."""
    a = ctx.a
    if isinstance(call.func, cst.Name):
        local = a.local_functions(call.func)
        if local:
            return any(draws_unseeded(a, f) for f in local)
    external = external_functions.external_callable(a, call)
    return external is not None and draws_unseeded(*external, call=call)


@fact
def random_splits(a, exprs, depth: int = 0, seen=None, names=None, helpers=None, ctx=None) -> List[cst.Call]:
    """The random splitters (apis.RANDOM_ARRAY_SPLITTERS) and NumPy global
    draws the values of these expressions come from, followed through the
    names they read (collected in ``names``); with ``helpers`` a list, calls
    of functions drawing unseeded inside are collected there."""
    seen = seen if seen is not None else set()
    names = names if names is not None else set()
    out: List[cst.Call] = []
    for expr in exprs:
        if depth > 8 or id(expr) in seen:
            continue
        seen.add(id(expr))
        for node in walk(expr):
            if isinstance(node, cst.Call) and node not in out and (
                    a.is_name(node, apis.RANDOM_ARRAY_SPLITTERS) or a.names(node) & apis.NUMPY_REORDERING_DRAWS
                    or dataframe_draw(a, node)):
                out.append(node)
            elif isinstance(node, cst.Comparison):  # a random row mask: np.random.rand(n) <= 0.85
                out += [c for c in (node.left, *(t.comparator for t in node.comparisons))
                        if isinstance(c, cst.Call) and a.names(c) & apis.NUMPY_MASK_DRAWS and c not in out]
            elif isinstance(node, cst.Call) and helpers is not None and ctx is not None and node not in helpers \
                    and helper_draws(ctx, node):
                helpers.append(node)
            if not isinstance(node, cst.Name):
                continue
            names.add(node.value)
            for origin, value in a.assigned_values(node):
                if value is not None:
                    out += [c for c in random_splits(a, [value], depth + 1, seen, names, helpers, ctx) if c not in out]
                elif isinstance(origin, cst.Name):
                    unpack = dataset_splits.unpacked(a, origin)
                    if unpack is not None:
                        out += [c for c in random_splits(a, [unpack[0].value], depth + 1, seen, names, helpers, ctx)
                                if c not in out]
                    elif dataflow.assigned_by(a, origin) is not None:
                        # x_train, x_test, ... = get_data(): what the call draws
                        out += [c for c in random_splits(a, [dataflow.assigned_by(a, origin)], depth + 1, seen,
                                                          names, helpers, ctx) if c not in out]
    return out
