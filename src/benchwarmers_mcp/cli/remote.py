"""The CLI's side of the one client of a running server (``benchwarmers_mcp/client.py``): which
paths take the admin token, and the one place the client's failures become exit codes and the
sentences the user reads.

The CLI is a thin HTTP client: it imports nothing of the engine. Everything it knows about the
server comes from the server's replies, and which routes are the admin's from the route table
(``routes.py``, plain data). ``BENCHWARMERS_ADMIN_TOKEN`` goes as Bearer on the admin routes
(``/api/...``), ``BENCHWARMERS_KEY`` on the gateway's (``/v1/...``, ``/bench/...``); neither is ever
printed.
"""

from __future__ import annotations

import json
import os
from collections.abc import Awaitable, Callable, Iterator, Mapping
from contextlib import contextmanager
from typing import Any

import httpx

from benchwarmers_mcp import __version__, client
from benchwarmers_mcp.client import PanelUpdate, ServerClient, ServerConfig
from benchwarmers_mcp.routes import is_admin_path  # the route table's data: no handler, no engine


class CliError(Exception):
    """A failure the user reads on stderr; ``code`` is the exit code."""

    code = 1

    def __init__(self, message: str) -> None:
        super().__init__(message)
        self.message = message


class UsageError(CliError):
    code = 2


class NoServer(CliError):
    code = 3


def config_from_env(url: str | None = None, env: Mapping[str, str] = os.environ) -> ServerConfig:
    """The client's settings; a setting that cannot be used is bad usage (exit 2)."""
    config = ServerConfig.from_env(env, url)
    if config.problems:
        raise UsageError(config.problems[0])
    return config




class Remote:
    """One server for one command: ``async with Remote(config) as remote``. The shared client, with
    the CLI's admin paths, and every ``ClientError`` turned into a ``CliError``."""

    def __init__(self, config: ServerConfig, *, transport: httpx.AsyncBaseTransport | None = None) -> None:
        self.config = config
        self.url = config.url
        # the server records the panels this agent asks as asked from the CLI (``gateway.face.origin``)
        self._client = ServerClient(config, admin_path=is_admin_path, agent=f"benchwarmers-cli/{__version__}",
                                    transport=transport)

    async def __aenter__(self) -> Remote:
        return self

    async def __aexit__(self, *exc: object) -> None:
        await self._client.__aexit__(*exc)

    async def get(self, path: str, params: dict[str, Any] | None = None) -> Any:
        with self._mapped():
            return await self._client.get(path, params)

    async def post(self, path: str, body: dict[str, Any]) -> Any:
        with self._mapped():
            return await self._client.post(path, body)

    async def panel(self, body: dict[str, Any], on_update: Callable[[PanelUpdate], Awaitable[None]]) -> dict[str, Any]:
        """A streamed panel: each update to ``on_update``; returns the final ``bench`` field."""
        with self._mapped():
            return await self._client.panel(body, on_update)

    @contextmanager
    def _mapped(self) -> Iterator[None]:
        try:
            yield
        except client.ClientError as e:
            raise self._explain(e) from e

    def _explain(self, error: client.ClientError) -> CliError:
        if isinstance(error, client.Unreachable):
            where = "" if self.config.source in ("the default", "--url") else f", the URL from {self.config.source}"
            return NoServer(f"no Benchwarmers server at {self.url} ({type(error.cause).__name__}{where}); start one "
                            "with `benchwarmers` (or try `benchwarmers demo`), or point --url / BENCHWARMERS_URL "
                            "at a running one (or set BENCH_PORT as the server has it)")
        if isinstance(error, client.TimedOut):
            return CliError(f"{error.method} {error.path}: no answer from {self.url} within {error.seconds:g} s "
                            "(BENCHWARMERS_TIMEOUT sets the limit)")
        if isinstance(error, client.NotJson):
            return CliError(f"{self.url} answered {error.method} {error.path} with something that is not JSON; "
                            "is it a Benchwarmers server, and is it older than this CLI?")
        if isinstance(error, client.Refused):
            return CliError(self._refusal(error))
        if isinstance(error, client.PanelFailed):
            return CliError(f"the panel failed: {error.message}")
        if isinstance(error, client.PanelCut):
            return CliError("the stream ended before the panel did (no bench field); see the server log")
        return CliError(error.message)

    def _refusal(self, error: client.Refused) -> str:
        method, path, status, message = error.method, error.path, error.status, error.reason
        if status in (404, 405) and (message is None or message.startswith("no route")):
            return (f"the server at {self.url} has no {method} {path.split('?', 1)[0]}: it is older than this "
                    "CLI (or not Benchwarmers); upgrade it")
        text = f"{message or 'no reason given'} (HTTP {status})"
        if status in (401, 403):
            which = "BENCHWARMERS_ADMIN_TOKEN (the server's admin token)" if is_admin_path(path) \
                else "BENCHWARMERS_KEY (a gateway key: bench key create <name>)"
            text += f"; set {which}"
        return text


def given(**fields: Any) -> dict[str, Any]:
    """The optional request fields a command was given; a flag left out (None, False, empty) is not sent."""
    return {name: value for name, value in fields.items() if value}


def present(**fields: Any) -> dict[str, Any]:
    """The request fields that have a value: only None (a flag left out) is not sent, so an empty text
    or list still reaches the server (``--description ""`` clears a description)."""
    return {name: value for name, value in fields.items() if value is not None}


def dumps(data: Any) -> str:
    return json.dumps(data, indent=2, ensure_ascii=False)
