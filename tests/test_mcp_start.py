"""The app starts its MCP side on the first /mcp request; a request that comes while it starts waits
for it, never reaching a session manager that does not run yet ("Task group is not initialized", a
500 that Claude Code's retry after its 5 s version probe met on a busy machine: issue 29)."""

from __future__ import annotations

from collections.abc import AsyncIterator
from contextlib import asynccontextmanager

import anyio
import pytest
from mcp.server.streamable_http_manager import StreamableHTTPSessionManager

from benchwarmers_mcp.settings import Settings
from tests.kits.security import app_client

HELLO = {"jsonrpc": "2.0", "id": 1, "method": "initialize", "params": {
    "protocolVersion": "2025-06-18", "capabilities": {}, "clientInfo": {"name": "t", "version": "0"}}}
ACCEPT = {"Accept": "application/json, text/event-stream"}


@pytest.mark.anyio
async def test_no_request_reaches_the_mcp_session_manager_before_it_runs(settings: Settings,
                                                                         monkeypatch: pytest.MonkeyPatch) -> None:
    entered, release = anyio.Event(), anyio.Event()
    real_run = StreamableHTTPSessionManager.run

    @asynccontextmanager
    async def slow_run(self: StreamableHTTPSessionManager) -> AsyncIterator[None]:
        entered.set()  # the session manager is about to start: the window the first request waits through
        await release.wait()
        async with real_run(self):
            yield

    monkeypatch.setattr(StreamableHTTPSessionManager, "run", slow_run)
    statuses: list[int] = []
    async with app_client(settings) as client:
        async def hello() -> None:
            statuses.append((await client.post("/mcp", json=HELLO, headers=ACCEPT)).status_code)

        async with anyio.create_task_group() as tg:
            tg.start_soon(hello)
            await entered.wait()
            assert getattr(client.asgi_app.state, "mcp_http", None) is None, "a handler before its manager runs"
            tg.start_soon(hello)  # the second comes while the first starts the MCP side
            release.set()
    assert statuses == [200, 200]
