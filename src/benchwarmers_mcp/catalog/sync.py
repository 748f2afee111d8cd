"""Keeping every model's catalog facts in step with the catalog, and refreshing the catalog.

``ensure_current``: when the catalog's version (the snapshot's package version, each feed's
fetch time) differs from the one the stored facts were derived from, derive them again; nothing
is fetched. ``refresh_all``: fetch the feeds (only when the user asked, or switched the catalog
job on), keep each one that worked, keep the last good copy of each that failed, derive again,
and re-read the listings of the endpoints that serve registered models.
"""

from __future__ import annotations

import time
from typing import Any

import anyio

from benchwarmers_mcp.catalog import data, paid
from benchwarmers_mcp.catalog.data import Catalog
from benchwarmers_mcp.catalog.feeds import READERS, FeedError, feed_urls, fetch_json
from benchwarmers_mcp.catalog.merge import catalog_layers, listing_layer
from benchwarmers_mcp.context import Context
from benchwarmers_mcp.errors import ProviderError
from benchwarmers_mcp.store import catalog as catalog_store
from benchwarmers_mcp.store import endpoints as endpoint_store
from benchwarmers_mcp.store import facts
from benchwarmers_mcp.store import models as model_store
from benchwarmers_mcp.store.endpoints import Endpoint
from benchwarmers_mcp.store.facts import Layer
from benchwarmers_mcp.upstream.listing import Listing, listing

FACTS_VERSION = "facts_version"
REGISTER_LISTING_TIMEOUT = 10.0
ENV_NAMES = {data.MODELS_DEV: "BENCH_CATALOG_MODELS_DEV_URL", data.OPENROUTER: "BENCH_CATALOG_OPENROUTER_URL",
             data.FREELLMAPI: "BENCH_CATALOG_FREELLMAPI_URL"}


async def rederive(ctx: Context, catalog: Catalog) -> int:
    """Every model's catalog layers from this catalog, then the version they came from."""
    endpoints = {e.name: e for e in await endpoint_store.list_all(ctx.db)}
    changes: dict[str, dict[str, Layer | None]] = {}
    for model in await model_store.list_all(ctx.db):
        endpoint = endpoints.get(model.endpoint)
        if endpoint is not None:
            changes[model.alias] = catalog_layers(catalog, endpoint, model.served)
    await facts.apply(ctx.db, changes)
    await catalog_store.set_state(ctx.db, FACTS_VERSION, catalog.version)
    return len(changes)


async def ensure_current(ctx: Context) -> Catalog:
    """The catalog, with every model's catalog facts derived from it (no network)."""
    catalog = await data.current(ctx.db)
    if await catalog_store.get_state(ctx.db, FACTS_VERSION) != catalog.version:
        await rederive(ctx, catalog)
    return catalog


def _released(catalog: Catalog) -> dict[str, float | None]:
    return {e.key: e.released_at for e in catalog.entries}


async def note_seen(ctx: Context, catalog: Catalog) -> None:
    await catalog_store.note_seen(ctx.db, _released(catalog), catalog.version)


async def first_seen(ctx: Context, catalog: Catalog, now: float) -> dict[str, float]:
    """When this install first saw each entry, read only (``catalog_store.seen_as_of``): what a GET shows."""
    return await catalog_store.seen_as_of(ctx.db, _released(catalog), now)


async def listing_within(ctx: Context, endpoint: Endpoint, seconds: float) -> tuple[Listing | None, str]:
    """The endpoint's listing if it answers, whole, within ``seconds``; else None and why (an error
    status, no answer, a listing that trickles in). httpx's timeout bounds each phase of the
    exchange; this deadline bounds all of it, so nothing waiting on it waits longer."""
    with anyio.move_on_after(seconds):
        try:
            return await listing(ctx, endpoint, timeout=seconds), ""
        except ProviderError as e:
            return None, e.message
    return None, f"no whole answer within {seconds:g} s"


async def layers_for_new(ctx: Context, endpoint: Endpoint, served: str, listed: Listing | None = None) -> list[Layer]:
    """Everything but the user's say about a model about to be registered: the catalog's layers and
    the listing's (``listed`` when just read, else the endpoint's listing if it answers within
    ``REGISTER_LISTING_TIMEOUT``). Reading the listing is never fatal: without it the model is
    registered with the catalog's facts, and the next refresh reads the listing again."""
    catalog = await ensure_current(ctx)
    layers = [layer for layer in catalog_layers(catalog, endpoint, served).values() if layer is not None]
    if not endpoint.simulated:
        if listed is None:
            listed, _ = await listing_within(ctx, endpoint, REGISTER_LISTING_TIMEOUT)
        layer = listing_layer(endpoint, listed.facts.get(served)) if listed else None
        if layer is not None:
            layers.append(layer)
    return layers


async def update_listing(ctx: Context, endpoint: Endpoint, listed_facts: dict[str, dict[str, Any]]) -> int:
    """The listing layer of every model on ``endpoint`` from what its listing just said."""
    models = [m for m in await model_store.list_all(ctx.db) if m.endpoint == endpoint.name]
    await facts.apply(ctx.db, {m.alias: {"listing": listing_layer(endpoint, listed_facts.get(m.served))}
                               for m in models})
    return len(models)


async def _refresh_listings(ctx: Context) -> list[dict[str, Any]]:
    models = await model_store.list_all(ctx.db, include_retired=False)
    used = {m.endpoint for m in models}
    chosen = [e for e in await endpoint_store.list_all(ctx.db) if e.name in used and not e.simulated]
    out: list[dict[str, Any]] = []

    async def one(endpoint: Endpoint) -> None:
        try:
            listed = await listing(ctx, endpoint)
        except ProviderError as e:
            out.append({"endpoint": endpoint.name, "ok": False, "error": e.message})
            return
        count = await update_listing(ctx, endpoint, listed.facts)
        out.append({"endpoint": endpoint.name, "ok": True, "models": count})

    async with anyio.create_task_group() as tg:
        for endpoint in chosen:
            tg.start_soon(one, endpoint)
    return sorted(out, key=lambda r: str(r["endpoint"]))


async def _refresh_feed(ctx: Context, name: str, url: str) -> dict[str, Any]:
    if not url:
        return {"feed": name, "ok": None, "skipped": f"no URL set ({ENV_NAMES[name]})"}
    now = time.time()
    try:
        body, count = READERS[name](await fetch_json(ctx.client, url, ctx.settings.catalog_timeout))
    except FeedError as e:
        await catalog_store.feed_failed(ctx.db, name, url, e.message, now)
        kept = (await catalog_store.feeds(ctx.db, with_bodies=False)).get(name)
        last = kept.fetched_at if kept else None
        return {"feed": name, "ok": False, "url": url, "error": e.message,
                "kept": "the last good copy" if last else ("the shipped snapshot" if name == data.MODELS_DEV
                                                          else "nothing (never fetched)"),
                "last_good_at": last}
    await catalog_store.save_feed(ctx.db, name, url, body, count, now)
    return {"feed": name, "ok": True, "url": url, "entries": count, "fetched_at": now}


async def refresh_all(ctx: Context) -> dict[str, Any]:
    """Fetch every feed with a URL (in parallel), derive every model's facts again, re-read the
    listings of the endpoints in use. A feed that fails keeps its last good copy. A free model that
    is priced now raises a "went paid" alert (``catalog/paid.py``); one free again clears it."""
    before = await paid.prices(ctx)
    await note_seen(ctx, await data.current(ctx.db))  # what this install had before: what it had seen
    results: list[dict[str, Any]] = []

    async def one(name: str, url: str) -> None:
        results.append(await _refresh_feed(ctx, name, url))

    async with anyio.create_task_group() as tg:
        for name, url in feed_urls(ctx.settings).items():
            tg.start_soon(one, name, url)
    catalog = await data.current(ctx.db)
    derived = await rederive(ctx, catalog)
    listings = await _refresh_listings(ctx)
    await note_seen(ctx, catalog)
    alerts = await paid.settle(ctx, before)
    order = list(data.FEEDS)
    return {"feeds": sorted(results, key=lambda r: order.index(r["feed"])), "version": catalog.version,
            "entries": len(catalog.index.entries), "models": derived, "listings": listings, **alerts}


async def status(ctx: Context) -> dict[str, Any]:
    """Where the catalog's data comes from now (no network)."""
    catalog = await data.current(ctx.db)
    stored = await catalog_store.feeds(ctx.db, with_bodies=False)
    urls = feed_urls(ctx.settings)
    feeds_out = []
    for name in data.FEEDS:
        feed = stored.get(name)
        feeds_out.append({"feed": name, "url": urls[name] or None, "entries": feed.entries if feed else 0,
                          "fetched_at": feed.fetched_at if feed else None, "tried_at": feed.tried_at if feed else None,
                          "error": (feed.error or None) if feed else None})
    base = "refreshed" if stored.get(data.MODELS_DEV) and stored[data.MODELS_DEV].fetched_at else "shipped"
    return {"version": catalog.version, "base": base, "entries": len(catalog.index.entries),
            "providers": len(catalog.providers), "feeds": feeds_out}
