"""The server's cyclic collector (``cli.server.settle_collector``): start-up's objects frozen out of
later collections, the young generation collected less often."""

from __future__ import annotations

import gc

from benchwarmers_mcp.cli.server import GC_THRESHOLDS, settle_collector


def test_settle_collector_freezes_start_up_and_raises_the_young_threshold() -> None:
    before = gc.get_threshold()
    try:
        settle_collector()
        assert gc.get_threshold() == GC_THRESHOLDS
        assert gc.get_freeze_count() > 10_000, "what start-up made is out of every later collection"
    finally:
        gc.unfreeze()
        gc.set_threshold(*before)
