"""Shared set-up for the ratings tests (no tests here): a store with models, and verdicts made the
way the product makes them (a panel, its seats, a verdict per seat)."""

from __future__ import annotations

import itertools
import time

from benchwarmers_mcp.context import Access
from benchwarmers_mcp.store import Database, calls, endpoints, models, verdicts
from benchwarmers_mcp.store import collections as collection_store
from benchwarmers_mcp.store.calls import PanelRecord, SeatRecord
from benchwarmers_mcp.store.collections import Collection
from benchwarmers_mcp.store.endpoints import Endpoint
from benchwarmers_mcp.store.models import ModelRecord
from benchwarmers_mcp.store.verdicts import Verdict

_panels = itertools.count(1)
LOCAL = Access.unscoped()


async def bench(db: Database, aliases: list[str], collections: dict[str, list[str]], *,
                base_url: str = "http://127.0.0.1:9/v1", **fields: object) -> None:
    await endpoints.add(db, Endpoint("ep", base_url))
    for alias in aliases:
        await models.register(db, ModelRecord(alias, alias, "ep", alias, **fields))  # type: ignore[arg-type]
    for name, members in collections.items():
        await collection_store.save(db, Collection(name, tuple(members)))


async def judge(db: Database, alias: str, useful: int, not_useful: int = 0, *, wrong: int = 0,
                collection: str = "bench/core", shape: str = "general", label: str = "explorer") -> None:
    """One panel of ``useful + not_useful`` seats of ``alias``, each judged; ``wrong`` of the
    not-useful ones carry a false claim."""
    now = time.time()
    panel = f"p20260101-000000-{next(_panels):04x}"
    await calls.create_panel(db, PanelRecord(panel, now, collection, shape, "collection", "all", "local", None,
                                             "q", []))
    for i in range(useful + not_useful):
        call = f"{panel}.seat{i}"
        await calls.record_seat(db, SeatRecord(call, panel, f"seat{i}", label, alias, "ok", 1.0, "answer", at=now))
        good = i < useful
        false = ("a bug that is not there",) if not good and i - useful < wrong else ()
        await verdicts.record(db, Verdict(call, good, false=false, at=now), access=LOCAL)
