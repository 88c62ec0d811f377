"""tests/slow/tiers.py stays true: every test it moves to the extended tier,
and the sibling it names, are collected; the sibling runs in the slow tier.
No process is started: this test costs nothing of the budget."""
from __future__ import annotations

import pytest

from tiers import EXTENDED

pytestmark = pytest.mark.slow


def test_every_test_moved_to_the_extended_tier_names_a_sibling_in_the_slow_tier(request):
    collected = request.config.__dict__.get("tfdist_collected", {})
    if not all(key.startswith("test_") for key in collected) or len({k.split("::")[0] for k in collected}) < 20:
        # Not a missing stack: a run of a few slow files cannot see the table's other tests
        pytest.skip("run with the whole slow directory collected (bash scripts/test.sh slow)")
    for moved, sibling in EXTENDED.items():
        assert moved in collected, f"{moved}: no such test"
        assert sibling in collected, f"{sibling} (sibling of {moved}): no such test"
        assert not collected[sibling], f"{sibling} (sibling of {moved}) is in the extended tier itself"
