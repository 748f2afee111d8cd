"""Discover's first sightings, read without writing (issue 29.11: a GET notes nothing): before
this install has noted anything, a read says what the first note will record (each entry on its
release day, or long ago), and after it, what was noted; only ``note_seen`` writes."""

from __future__ import annotations

import time
from pathlib import Path

import pytest

from benchwarmers_mcp.store import catalog as catalog_store
from tests.kits.store import store_of

pytestmark = [pytest.mark.anyio, pytest.mark.backends]

DAY = 86400.0


async def test_a_read_before_any_note_says_what_the_first_note_records(home: Path) -> None:
    now = time.time()
    entries = {"p/old": now - 400 * DAY, "p/fresh": now - 2 * DAY, "p/undated": None, "p/future": now + DAY}
    async with store_of(home) as db:
        shown = await catalog_store.seen_as_of(db, entries, now)
        assert await catalog_store.first_seen(db) == {}, "a read notes nothing"
        await catalog_store.note_seen(db, entries, "v1")
        noted = await catalog_store.first_seen(db)
        assert noted.keys() == shown.keys()
        assert all(abs(noted[k] - shown[k]) < 60 for k in shown), (noted, shown)  # the future entry: "now"
        assert shown["p/old"] == now - 400 * DAY and shown["p/undated"] == 0.0

        later = {**entries, "p/new": now - 300 * DAY}  # a later catalog: noted when it is first noted
        assert await catalog_store.seen_as_of(db, later, now) == noted, "once noted, a read says what was noted"
        await catalog_store.note_seen(db, later, "v2")
        assert (await catalog_store.first_seen(db))["p/new"] >= now - 60
