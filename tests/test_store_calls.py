"""Panel ids: a taken id is drawn again, never a failed panel."""

from __future__ import annotations

import pytest

from benchwarmers_mcp.store import calls
from benchwarmers_mcp.store.calls import PanelRecord
from tests.kits.store import store_of

pytestmark = [pytest.mark.anyio, pytest.mark.backends]


async def test_a_taken_panel_id_is_drawn_again(home, monkeypatch):
    async with store_of(home) as db:
        first = PanelRecord("p20261130-101010-abcd", 1.0, "bench/c", "general", "default", "all", "local", None,
                            "x", [])
        await calls.create_panel(db, first)
        drawn = iter(["p20261130-101010-abcd", "p20261130-101010-0001"])
        monkeypatch.setattr(calls, "new_panel_id", lambda now=None: next(drawn))
        second = PanelRecord("p20261130-101010-abcd", 1.0, "bench/c", "general", "default", "all", "local", None,
                             "y", [])
        assert await calls.create_panel(db, second) == "p20261130-101010-0001"
        assert second.id == "p20261130-101010-0001"
        assert len(await calls.panels(db)) == 2
