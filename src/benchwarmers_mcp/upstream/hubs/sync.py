"""Keeping the bench in step with a hub.

``sync`` reads the hub's upstreams (its adapter, ``upstream/hubs/*.py``) and then:

1. follows renames: a registered model whose served name the hub no longer lists, when the hub now
   lists exactly one new name for the same model at the same upstream (``renames``: the same
   ``upstream_model``, on the same connection when more than one would do), keeps its alias under
   the new name. This runs before the retire rules look (``health/retire.py`` calls ``follow_all``
   first), so a hub renaming a prefix never retires anything;
2. makes one endpoint per upstream connection (``<hub endpoint>-<connection>``: the hub's base URL
   and key, a connection of its own) and puts every registered model of the hub on the one for its
   upstream, so rate limits, rests and pauses are kept per real upstream, never shared by a whole hub;
3. keeps the listing (``store/hubs.py``), which the next sync's renames are read against.

``register`` adds a model through the hub's admin API, syncs, and (``bench=True``) registers it on
the endpoint of its upstream.
"""

from __future__ import annotations

import hashlib
import logging
from dataclasses import dataclass, field
from typing import Any

from benchwarmers_mcp.catalog.registration import register_new
from benchwarmers_mcp.context import Context
from benchwarmers_mcp.errors import BadRequest, NotFound, ProviderError
from benchwarmers_mcp.store import endpoints as endpoint_store
from benchwarmers_mcp.store import hubs as hub_store
from benchwarmers_mcp.store import models as model_store
from benchwarmers_mcp.store import names
from benchwarmers_mcp.store.endpoints import Endpoint
from benchwarmers_mcp.store.hubs import HubEndpoint, HubModel
from benchwarmers_mcp.store.models import ModelRecord
from benchwarmers_mcp.upstream.hubs import adapter
from benchwarmers_mcp.upstream.hubs.base import HubCall, NewModel, Upstream, admin_key_name

log = logging.getLogger("benchwarmers.hubs")


@dataclass
class Report:
    endpoint: str
    hub: str
    connections: dict[str, list[str]] = field(default_factory=dict)  # connection -> served names
    routes: dict[str, str] = field(default_factory=dict)  # connection -> the endpoint made for it
    renamed: dict[str, tuple[str, str]] = field(default_factory=dict)  # alias -> (old, new)
    placed: dict[str, str] = field(default_factory=dict)  # alias -> the endpoint it was moved to

    def as_dict(self) -> dict[str, Any]:
        return {"endpoint": self.endpoint, "hub": self.hub, "connections": self.connections, "routes": self.routes,
                "renamed": {a: {"from": o, "to": n} for a, (o, n) in self.renamed.items()}, "placed": self.placed}


def renames(registered: dict[str, str], before: dict[str, HubModel], now: list[Upstream]) -> dict[str, str]:
    """Which registered served names (``served -> alias``) the hub renamed, as ``served -> new``:
    one no longer listed whose model (the same ``upstream_model``) the hub now lists under exactly
    one name that is new (neither registered nor in the last listing), preferring one on the same
    connection. Pure: what it decides, it decides from these three alone."""
    listed = {u.served for u in now}
    fresh = [u for u in now if u.served not in registered and u.served not in before]
    out: dict[str, str] = {}
    taken: set[str] = set()
    for served in registered:
        old = before.get(served)
        if served in listed or old is None:
            continue
        same = [u for u in fresh if u.upstream_model == old.upstream_model and u.served not in taken]
        if len(same) > 1:
            same = [u for u in same if u.connection == old.connection]
        if len(same) == 1:
            out[served] = same[0].served
            taken.add(same[0].served)
    return out


def route_name(hub_endpoint: str, connection: str) -> str:
    """The endpoint made for one of a hub's upstream connections: ``<hub>-<connection>``, shortened
    (with a hash of the whole) to fit the naming rule."""
    name = names.suggestion(f"{hub_endpoint}-{connection}") or f"{hub_endpoint}-{connection}"
    if names.fits(name):
        return name
    tail = hashlib.sha256(f"{hub_endpoint}/{connection}".encode()).hexdigest()[:6]
    return f"{name[:25].rstrip('-')}-{tail}"


async def hub_call(ctx: Context, entry: HubEndpoint) -> tuple[Endpoint, HubCall]:
    endpoint = await endpoint_store.get(ctx.db, entry.endpoint)
    key_name = endpoint.key_name or endpoint.name
    admin = ctx.keys.get(entry.admin_key or admin_key_name(key_name))
    return endpoint, HubCall(ctx, endpoint, adapter(entry.hub).root(endpoint.base_url), ctx.keys.get(key_name), admin)


async def the_hub(ctx: Context, name: str) -> HubEndpoint:
    entry = await hub_store.hub_of(ctx.db, name)
    if entry is None:
        raise BadRequest(f"{name} is not a hub: add it with its hub (bench endpoint add {name} --base URL --hub "
                         "litellm|openwebui|cliproxy)")
    if entry.parent:
        raise BadRequest(f"{name} stands for one upstream of the hub {entry.parent}: sync {entry.parent}")
    return entry


async def upstreams(ctx: Context, name: str) -> tuple[HubEndpoint, list[Upstream]]:
    entry = await the_hub(ctx, name)
    _, call = await hub_call(ctx, entry)
    return entry, await adapter(entry.hub).upstreams(call)


async def sync(ctx: Context, name: str) -> Report:
    entry, listed = await upstreams(ctx, name)
    hub_endpoint = await endpoint_store.get(ctx.db, name)
    report = Report(name, entry.hub)
    by_served = {u.served: u for u in listed}
    routes = {r.upstream: r.endpoint for r in await hub_store.routes_of(ctx.db, name) if r.upstream}
    ours = set(routes.values()) | {name}
    models = [m for m in await model_store.list_all(ctx.db) if m.endpoint in ours]
    before = await hub_store.listing(ctx.db, name)
    for old, new in renames({m.served: m.alias for m in models}, before, listed).items():
        model = next(m for m in models if m.served == old)
        await hub_store.place(ctx.db, model.alias, model.endpoint, new, f"{name} renamed {old} to {new}")
        report.renamed[model.alias] = (old, new)
    for u in listed:
        report.connections.setdefault(u.connection, []).append(u.served)
        if u.connection not in routes:
            routes[u.connection] = await _route(ctx, hub_endpoint, entry, u.connection)
    report.routes = {c: routes[c] for c in report.connections}
    for model in await _models_on(ctx, ours | set(routes.values())):
        found = by_served.get(model.served)
        if found is not None and model.endpoint != routes[found.connection]:
            await hub_store.place(ctx.db, model.alias, routes[found.connection], model.served,
                                  f"it comes through {found.connection} behind {name}")
            report.placed[model.alias] = routes[found.connection]
    await hub_store.save_listing(ctx.db, name, [HubModel(u.served, u.connection, u.upstream_model) for u in listed],
                                 ctx.clock.now())
    return report


async def _models_on(ctx: Context, endpoints: set[str]) -> list[ModelRecord]:
    return [m for m in await model_store.list_all(ctx.db) if m.endpoint in endpoints]


async def _route(ctx: Context, hub: Endpoint, entry: HubEndpoint, connection: str) -> str:
    """The endpoint for one upstream connection of a hub: its base URL, API, key and headers."""
    name = route_name(hub.name, connection)
    taken = await hub_store.hub_of(ctx.db, name)
    if (taken is None or taken.parent != hub.name) and name in {e.name for e in await endpoint_store.list_all(ctx.db)}:
        name = route_name(hub.name, f"{connection}-{hashlib.sha256(connection.encode()).hexdigest()[:4]}")
    await endpoint_store.add(ctx.db, Endpoint(name, hub.base_url, hub.api, "hub", hub.key_name or hub.name,
                                              dict(hub.headers)))
    await hub_store.set_hub(ctx.db, HubEndpoint(name, entry.hub, None, hub.name, connection))
    return name


async def follow_all(ctx: Context) -> dict[str, dict[str, Any]]:
    """Sync every hub (the retire job's first step); a hub that does not answer is left as it is
    (its listing snapshot will say so)."""
    out: dict[str, dict[str, Any]] = {}
    for entry in await hub_store.all_hubs(ctx.db):
        if entry.parent:
            continue
        try:
            out[entry.endpoint] = (await sync(ctx, entry.endpoint)).as_dict()
        except (ProviderError, NotFound, BadRequest) as e:
            log.warning("could not sync the hub %s: %s", entry.endpoint, e.message)
            out[entry.endpoint] = {"error": e.message}
    return out


async def register(ctx: Context, name: str, new: NewModel, *, bench: bool = True) -> dict[str, Any]:
    """Add ``new`` through the hub's admin API, sync, and put it on the bench (on its upstream's
    endpoint) unless ``bench`` is False."""
    entry = await the_hub(ctx, name)
    _, call = await hub_call(ctx, entry)
    await adapter(entry.hub).register(call, new)
    report = await sync(ctx, name)
    out: dict[str, Any] = {"sync": report.as_dict(), "added": new.served}
    if bench:
        connection = next((c for c, served in report.connections.items() if new.served in served), None)
        if connection is None:
            raise BadRequest(f"{name} took {new.served} but does not list it yet; bench hub sync {name} once it does")
        record = (await register_new(ctx, new.served, report.routes[connection])).model
        out["model"] = {"alias": record.alias, "endpoint": record.endpoint, "served": record.served}
    return out


__all__ = ["Report", "follow_all", "hub_call", "register", "renames", "route_name", "sync", "upstreams"]
