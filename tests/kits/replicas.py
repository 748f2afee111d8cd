"""Several server processes on one store: a connection limit set by hand, and panels sent to
each server at once (``tests/e2e/test_limits_processes.py``, ``test_replicas_processes.py``)."""

from __future__ import annotations

from pathlib import Path

import anyio
import httpx

from benchwarmers_mcp.store import collections as cs
from benchwarmers_mcp.store import limits as store
from tests.kits.store import store_of


async def limit_fake(home: Path, rpm: int) -> None:
    """Panels of up to five members, no explorers, and ``rpm`` on the ``fake`` connection."""
    async with store_of(home) as db:
        await cs.save_gateway_settings(db, cs.GatewaySettings(max_calls=5, max_explorers=0))
        await store.set_limit(db, "connection", "fake", "rpm", rpm)


async def panels(bases: list[str], per_server: int, collection: str = "bench/trio") -> list[dict]:
    """``per_server`` panels of ``collection`` sent to every server at once; every seat they report."""
    seats: list[dict] = []

    async def one(base: str) -> None:
        async with httpx.AsyncClient(timeout=60) as http:
            reply = await http.post(base + "/v1/chat/completions", json={
                "model": collection, "messages": [{"role": "user", "content": "check this"}]})
            reply.raise_for_status()
            seats.extend(reply.json()["bench"]["seats"])

    async with anyio.create_task_group() as tg:
        for _ in range(per_server):
            for base in bases:
                tg.start_soon(one, base)
    return seats
