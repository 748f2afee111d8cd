"""The health jobs the scheduler runs (``benchwarmers_mcp.health.jobs:<name>``), each an async
function of the context returning what it did. Ad hoc models, image generators and retired models
are never probed on a schedule; probes run one at a time per connection, connections side by side."""

from __future__ import annotations

from collections.abc import Awaitable, Callable
from typing import Any

import anyio

from benchwarmers_mcp.context import Context
from benchwarmers_mcp.health import retire
from benchwarmers_mcp.health.probes import CAPABILITY_PROMPTS, Prober
from benchwarmers_mcp.store import endpoints as endpoint_store
from benchwarmers_mcp.store import health as health_store
from benchwarmers_mcp.store import models as model_store
from benchwarmers_mcp.store.models import ModelRecord

CONNECTIONS_AT_ONCE = 4


async def probed_models(ctx: Context) -> list[ModelRecord]:
    """Who scheduled probes call: active, not ad hoc, not an image generator."""
    return [m for m in await model_store.list_all(ctx.db, include_retired=False)
            if not m.ad_hoc and m.role != "image"]


async def each_model(ctx: Context, models: list[ModelRecord],
                     work: Callable[[ModelRecord], Awaitable[dict[str, Any] | None]]) -> dict[str, Any]:
    """``work`` for every model: in turn on a connection, a few connections at a time."""
    connection = {e.name: e.connection_name for e in await endpoint_store.list_all(ctx.db)}
    groups: dict[str, list[ModelRecord]] = {}
    for m in models:
        groups.setdefault(connection.get(m.endpoint, m.endpoint), []).append(m)
    results: dict[str, Any] = {}
    limiter = anyio.CapacityLimiter(CONNECTIONS_AT_ONCE)

    async def one_connection(group: list[ModelRecord]) -> None:
        async with limiter:
            for m in group:
                results[m.alias] = await work(m)

    async with anyio.create_task_group() as tg:
        for group in groups.values():
            tg.start_soon(one_connection, group)
    return results


def _summary(rows: list[health_store.ProbeRow]) -> dict[str, Any]:
    return {r.prompt: ("answered" if r.answered else r.failure) for r in rows}


async def _probe_all(ctx: Context, kind: str) -> dict[str, Any]:
    async def work(m: ModelRecord) -> dict[str, Any]:
        return _summary(await Prober(ctx).probe(m, kind))

    results = await each_model(ctx, await probed_models(ctx), work)
    return {"probed": len(results), "results": results}


async def availability(ctx: Context) -> dict[str, Any]:
    """Daily: one "ready" per model."""
    return await _probe_all(ctx, "availability")


async def perf(ctx: Context) -> dict[str, Any]:
    """Weekly: three tiny and three large calls per model (p50, p95, chars/s, tokens/s)."""
    return await _probe_all(ctx, "speed")


async def capabilities(ctx: Context) -> dict[str, Any]:
    """Weekly: tools and reasoning, each only for models where it is not known yet from any source
    (a positive is learned as a fact; a probe that sees neither teaches nothing)."""
    known = await health_store.known_facts(ctx.db)
    everyone = await probed_models(ctx)
    unknown = {m.alias: tuple(p for p in CAPABILITY_PROMPTS if known.get(m.alias, {}).get(p) is None)
               for m in everyone}

    async def work(m: ModelRecord) -> dict[str, Any]:
        return _summary(await Prober(ctx).probe(m, "capabilities", only=unknown[m.alias]))

    models = [m for m in everyone if unknown[m.alias]]
    results = await each_model(ctx, models, work)
    return {"probed": len(results), "results": results}


async def deprecations(ctx: Context) -> dict[str, Any]:
    """Daily, after the listings: snapshot them, then auto-retire by the rules."""
    return await retire.deprecations(ctx)
