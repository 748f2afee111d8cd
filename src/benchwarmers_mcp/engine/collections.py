"""Collections as callers see them, whatever face they come through: named (``bench/core``,
``core``, ``bench/core:merged``), listed (what each is for, who sits, what the members can do
together; every collection under each reply mode), and the reply mode a request gets, resolved
once: the request's own (body, then suffix), else the collection's, else ``all``."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any, Literal, overload

from benchwarmers_mcp.errors import BadRequest
from benchwarmers_mcp.messages import Ask, Reply
from benchwarmers_mcp.store import Database
from benchwarmers_mcp.store import collections as collection_store
from benchwarmers_mcp.store import models as model_store
from benchwarmers_mcp.store.collections import Collection
from benchwarmers_mcp.store.models import ModelRecord

SUFFIXES: tuple[Reply, ...] = ("all", "merged", "route")
PanelReply = Literal["all", "merged"]
Listed = tuple[str, dict[str, Any]]


# ---- names -------------------------------------------------------------------------------------

def split_model(model: Any) -> tuple[str, Reply | None]:
    """``bench/core:merged`` -> (``core``, ``merged``). 400 when no model is named."""
    if not isinstance(model, str) or not model.strip():
        raise BadRequest("no model named: ask for a collection, model \"bench/<collection>\"; "
                         "GET /v1/models lists them")
    name = model.strip()
    if name.startswith("models/"):
        name = name[len("models/"):]
    if name.startswith("bench/"):
        name = name[len("bench/"):]
    reply: Reply | None = None
    if ":" in name:
        name, _, suffix = name.rpartition(":")
        reply = _as_reply(suffix)
        if reply is None:
            raise BadRequest(f"unknown reply mode ':{suffix}'; use :all, :merged or :route")
    return name, reply


def _as_reply(value: Any) -> Reply | None:
    return next((mode for mode in SUFFIXES if mode == value), None)


@overload
def reply_mode(ask: Ask, collection: Collection, *, can_route: Literal[False]) -> PanelReply: ...
@overload
def reply_mode(ask: Ask, collection: Collection, *, can_route: bool = True) -> Reply: ...


def reply_mode(ask: Ask, collection: Collection, *, can_route: bool = True) -> Reply:
    """The one place a request's reply mode is decided. A face that cannot route (MCP's ``ask``)
    gets a panel of every answer for a route-mode collection."""
    mode = ask.reply or _as_reply(collection.reply) or "all"
    if mode == "route" and not can_route:
        return "all"
    return mode


# ---- listing -----------------------------------------------------------------------------------

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


def entry(c: Collection, everyone: Mapping[str, ModelRecord], explorers: int) -> dict[str, Any]:
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


def with_modes(items: list[dict[str, Any]]) -> list[Listed]:
    """Each collection three times: as set, then under the other two reply modes."""
    out: list[Listed] = []
    for item in items:
        out.append((item["id"], item))
        for mode in SUFFIXES:
            if mode != item["reply"]:
                out.append((f"{item['id']}:{mode}", item))
    return out


__all__ = ["SUFFIXES", "Listed", "PanelReply", "entries", "entry", "reply_mode", "split_model", "with_modes"]
