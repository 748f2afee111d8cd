"""``benchwarmers demo``: a working panel of simulated models in a temporary data folder."""

from __future__ import annotations

from benchwarmers_mcp.providers.simulated import demo_served_names, parse_persona
from benchwarmers_mcp.store import Database, endpoints, models
from benchwarmers_mcp.store import collections as collection_store
from benchwarmers_mcp.store.collections import Collection
from benchwarmers_mcp.store.endpoints import Endpoint
from benchwarmers_mcp.store.models import ModelRecord


async def seed_demo(db: Database) -> Collection:
    """A simulated endpoint, five simulated models and a ``demo`` collection of three members."""
    await endpoints.add(db, Endpoint("simulated", "simulated://local", api="simulated", kind="simulated"))
    aliases = []
    for served, role in demo_served_names():
        name, _ = parse_persona(served.rsplit("/", 1)[-1])
        alias = f"sim-{name}"
        if await models.find(db, alias) is None:
            await models.register(db, ModelRecord(alias, served, "simulated", family=name, role=role,
                                                  context_window=32_000))
        aliases.append(alias)
    return await collection_store.save(db, Collection(
        "demo", tuple(aliases[:3]), "simulated models, for trying Benchwarmers with no endpoint", ("demo",)))
