"""Collections as callers list them: what each is for, who sits, what the members can do together;
and the two scope-aware look-ups every face shares (the listing, one collection by name)."""

from __future__ import annotations

from typing import Any

from starlette.requests import Request

from benchwarmers_mcp.access.guard import access_of
from benchwarmers_mcp.gateway.dispatch import context
from benchwarmers_mcp.store import Database
from benchwarmers_mcp.store import collections as collection_store
from benchwarmers_mcp.store import models as model_store
from benchwarmers_mcp.store.collections import Collection


async def entries(db: Database, *, only: set[str] | None = None) -> list[dict[str, Any]]:
    """One entry per collection (``only`` limits it to a key's scope)."""
    gateway = await collection_store.gateway_settings(db)
    everyone = {m.alias: m for m in await model_store.list_all(db)}
    out = []
    for c in await collection_store.list_all(db):
        if only is not None and c.name not in only:
            continue
        out.append(entry(c, everyone, gateway.explorers_for(len(c.members))))
    return out


def entry(c: Collection, everyone: dict, explorers: int) -> dict[str, Any]:
    members = [everyone[a] for a in c.members if a in everyone and not everyone[a].retired]
    windows = [m.context_window for m in members if m.context_window]
    caps = []
    if members and all(m.tools for m in members):
        caps.append("tools")
    if members and all(m.can_see for m in members):
        caps.append("vision")
    return {
        "name": c.name, "id": c.qualified, "description": c.description, "tags": list(c.tags),
        "members": list(c.members), "shape": c.shape or "general", "explorers": explorers, "reply": c.reply,
        "merger": c.merger,
        "together": {
            "context_window": min(windows) if windows else None,
            "context_unknown": [m.alias for m in members if not m.context_window],
            "capabilities": caps,
            "connections": sorted({m.endpoint for m in members}),
        },
    }


def with_modes(items: list[dict[str, Any]]) -> list[tuple[str, dict[str, Any]]]:
    """Each collection three times: as set, then under the other two reply modes."""
    out = []
    for item in items:
        out.append((item["id"], item))
        for mode in ("all", "merged", "route"):
            if mode != item["reply"]:
                out.append((f"{item['id']}:{mode}", item))
    return out


async def listed(request: Request) -> list[tuple[str, dict[str, Any]]]:
    """The collections under every reply mode, limited to the caller's key scope."""
    return with_modes(await entries(context(request).db, only=access_of(request).visible()))
