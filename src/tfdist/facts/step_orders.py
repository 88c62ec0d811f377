"""Step loops: find the number of training steps a loop runs, in every form
real scripts write it, so the data-division rule can make each rank run
1/size of them.

Forms: ``for s in range(n)``, ``range(a, b)``, ``range(1, n + 1)``, the
``six.moves``/``xrange`` spellings, ``while step < n`` (or ``<=``) with
``step += 1`` in the body, ``while True`` and ``for s in itertools.count()``
ended by ``if step >= n: break``. A count derived from arrays that were
already divided (see ``engine.dataflow.sized_after``) is per-rank already
and left alone. Anything else is reported, never guessed.
"""
from __future__ import annotations

from typing import Optional
import libcst as cst
from .. import apis
from .step_counts import unseen_helper
from . import seeding
from . import shard_points


def draws_own_order(ctx, iterable, depth: int = 0) -> Optional[str]:
    """The iterable is made by a helper (of this module or the project's,
    called there, or bound to a name from such a call) that reorders rows
    with NumPy's global generator and sets no seed of its own
    (data_division's check), with no global seed set at module level: each
    process then makes its own order, and every size-th element of
    different orders are not disjoint shares: "draws"; "unseen" when the
    helper is imported from a module tfdist cannot read (:func:`_unseen_helper`);
    None otherwise."""
    a = ctx.a
    if depth > 3:
        return None
    if isinstance(iterable, cst.Name):
        found = [draws_own_order(ctx, v, depth + 1) for _, v in a.assigned_values(iterable) if v is not None]
        return "draws" if "draws" in found else "unseen" if "unseen" in found else None
    if not isinstance(iterable, cst.Call) or shard_points.global_seed_set_before(
            a, iterable, apis.NUMPY_GLOBAL_SEED_SETTERS):
        return None
    if seeding.helper_draws(ctx, iterable):
        return "draws"
    return "unseen" if unseen_helper(ctx, iterable) else None
