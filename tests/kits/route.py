"""Shared set-up for the route-mode tests (no tests here): a gateway on the test's loopback with fast
route timings, and a data folder seeded with tool-calling members on the fake upstream."""

from __future__ import annotations

import json
from collections.abc import Awaitable, Callable, Iterator
from contextlib import contextmanager
from dataclasses import replace
from pathlib import Path
from typing import Any, TypeVar

import anyio
import httpx

from benchwarmers_mcp.engine.route import RouteTuning
from benchwarmers_mcp.settings import Settings
from tests.kits.gateway import gateway_app, gateway_serving
from tests.kits.loopback import Loopback
from tests.kits.seed import seed_async
from tests.kits.servers import free_port, serve_in_thread
from tests.kits.store import store_of

T = TypeVar("T")

FAST = RouteTuning(first_token=1.0, stream_wait=5.0, turn_timeout=20.0, rotation=0.0)


@contextmanager
def route_server(net: Loopback, settings: Settings, tuning: RouteTuning = FAST) -> Iterator[str]:
    """The gateway on ``net`` whose route turns use ``tuning``; stopped on exit."""
    with gateway_serving(net, settings, route_tuning=tuning) as base:
        yield base


@contextmanager
def route_server_on_socket(settings: Settings, tuning: RouteTuning = FAST) -> Iterator[str]:
    """The same, as a real server on a free port (in a thread), for a client in another process."""
    port = free_port()
    with serve_in_thread(gateway_app(replace(settings, port=port), route_tuning=tuning), port) as base:
        yield base


def seed_members(home: Path, upstream: str, served: dict[str, str], collections: dict[str, list[str]],
                 **fields: Any) -> None:
    """Members on the fake upstream that call tools (unless ``tools=False`` says otherwise)."""
    fields.setdefault("tools", True)
    anyio.run(lambda: seed_async(home, base_url=upstream, served=served, collections=collections, **fields))


def read(home: Path, reader: Callable[..., Awaitable[T]], *args: Any) -> T:
    """What a store read function (``routes.turns_of``, ``ledger.in_order`` ...) finds in the data folder."""
    async def run() -> T:
        async with store_of(home) as db:
            return await reader(db, *args)

    return anyio.run(run)


def tool_call(call_id: str, name: str, arguments: dict[str, Any]) -> dict[str, Any]:
    """A scripted assistant message that calls one tool (chat completions shape)."""
    return {"role": "assistant", "content": None,
            "tool_calls": [{"id": call_id, "type": "function",
                            "function": {"name": name, "arguments": json.dumps(arguments)}}]}


def said(text: str) -> dict[str, Any]:
    return {"role": "assistant", "content": text}


def turn(http: httpx.Client, base: str, system: str, *later: dict, session: str | None = None,
         session_header: str = "x-claude-code-session-id") -> httpx.Response:
    """One route turn of the ``agents`` collection with this system prompt (and ``later`` messages);
    ``session`` goes in ``session_header`` (Claude Code's, or Codex's ``session-id``)."""
    messages = [{"role": "system", "content": system}, {"role": "user", "content": "refactor the parser"}, *later]
    headers = {session_header: session} if session else {}
    response = http.post(base + "/v1/chat/completions", headers=headers, timeout=30,
                          json={"model": "bench/agents:route", "messages": messages})
    assert response.status_code == 200, response.text
    return response


def bench(response: httpx.Response) -> dict:
    return response.json()["bench"]


AGAIN = ({"role": "assistant", "content": "done"}, {"role": "user", "content": "and the tests"})
