"""A real server (uvicorn, a socket) stops promptly while an MCP client is connected to it."""

from __future__ import annotations

import threading
from dataclasses import replace

import anyio
import pytest
import uvicorn
from mcp import Client

from benchwarmers_mcp.app import create_app
from benchwarmers_mcp.settings import Settings
from tests.kits import mcp as kit
from tests.kits.mcp import TOOLS
from tests.kits.servers import free_port

pytestmark = [pytest.mark.anyio, pytest.mark.e2e]

settings = kit.settings


async def test_server_stops_promptly_with_a_session_open(settings: Settings) -> None:
    """A connected handshake-era client holds no stream open, so stopping the server never waits on it."""
    port = free_port()
    server = uvicorn.Server(uvicorn.Config(create_app(replace(settings, port=port)), host="127.0.0.1", port=port,
                                           log_level="warning", lifespan="on"))
    thread = threading.Thread(target=server.run, daemon=True)
    thread.start()
    while not server.started:
        assert thread.is_alive()
        await anyio.sleep(0.02)
    async with Client(f"http://127.0.0.1:{port}/mcp", mode="legacy") as client:
        assert {t.name for t in (await client.list_tools()).tools} == TOOLS
        server.should_exit = True
        await anyio.to_thread.run_sync(thread.join, 20)
        assert not thread.is_alive()
