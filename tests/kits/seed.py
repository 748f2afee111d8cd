"""Put endpoints, models and collections straight into a data folder's store, for tests."""

from __future__ import annotations

from pathlib import Path

import anyio

from benchwarmers_mcp.store import collections as collection_store
from benchwarmers_mcp.store import endpoints, models
from benchwarmers_mcp.store.collections import Collection
from benchwarmers_mcp.store.endpoints import Endpoint
from benchwarmers_mcp.store.models import ModelRecord, family_of
from tests.kits.store import store_of


async def seed_async(home: Path, *, base_url: str | None, served: dict[str, str] | list[str],
                     collections: dict[str, list[str]], api: str = "chat", endpoint: str = "fake",
                     **model_fields) -> None:
    """``served`` maps alias -> served name (a list uses each name as its own alias)."""
    if isinstance(served, list):
        served = {s.split("?")[0]: s for s in served}
    async with store_of(home) as db:
        await endpoints.add(db, Endpoint(endpoint, base_url or "simulated://local", api=api,
                                         kind="simulated" if api == "simulated" else "provider"))
        for alias, name in served.items():
            if await models.find(db, alias) is None:
                fields = dict(model_fields)
                await models.register(db, ModelRecord(alias, name, endpoint, family=fields.pop("family", None)
                                                      or family_of(alias), **fields))
        for cname, members in collections.items():
            await collection_store.save(db, Collection(cname, tuple(members), f"{cname} collection"))


def seed(home: Path, **kwargs) -> None:
    anyio.run(lambda: seed_async(home, **kwargs))
