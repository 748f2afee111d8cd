"""Shared set-up for the route-mode tests (no tests here): a gateway in a thread with fast route
timings, and a data folder seeded with tool-calling members on the fake upstream."""

from __future__ import annotations

import json
from collections.abc import Awaitable, Callable, Iterator
from contextlib import contextmanager
from dataclasses import replace
from pathlib import Path
from typing import Any, TypeVar

import anyio

from benchwarmers_mcp.app import create_app
from benchwarmers_mcp.engine.route import RouteTuning
from benchwarmers_mcp.settings import Settings
from benchwarmers_mcp.store import Database
from tests.seed import seed_async
from tests.servers import free_port, serve_in_thread

T = TypeVar("T")

FAST = RouteTuning(first_token=1.0, stream_wait=5.0, turn_timeout=20.0, rotation=0.0)


@contextmanager
def route_server(settings: Settings, tuning: RouteTuning = FAST) -> Iterator[str]:
    """A real server on a free port whose route turns use ``tuning``."""
    port = free_port()
    with serve_in_thread(create_app(replace(settings, port=port), route_tuning=tuning), port) as base:
        yield base


def seed_members(home: Path, upstream: str, served: dict[str, str], collections: dict[str, list[str]],
                 **fields: Any) -> None:
    """Members on the fake upstream that call tools (unless ``tools=False`` says otherwise)."""
    fields.setdefault("tools", True)
    anyio.run(lambda: seed_async(home, base_url=upstream, served=served, collections=collections, **fields))


def read(home: Path, reader: Callable[..., Awaitable[T]], *args: Any) -> T:
    """What a store read function (``routes.turns_of``, ``ledger.in_order`` ...) finds in the data folder."""
    async def run() -> T:
        async with Database(home / "benchwarmers.db") as db:
            return await reader(db, *args)

    return anyio.run(run)


def tool_call(call_id: str, name: str, arguments: dict[str, Any]) -> dict[str, Any]:
    """A scripted assistant message that calls one tool (chat completions shape)."""
    return {"role": "assistant", "content": None,
            "tool_calls": [{"id": call_id, "type": "function",
                            "function": {"name": name, "arguments": json.dumps(arguments)}}]}


def said(text: str) -> dict[str, Any]:
    return {"role": "assistant", "content": text}
