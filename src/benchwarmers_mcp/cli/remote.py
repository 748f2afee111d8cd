"""The CLI's one connection to a running server, and the one place its failures become exit codes.

The CLI is a thin HTTP client: it imports nothing of the engine. Everything it knows about the
server comes from the server's replies. ``BENCHWARMERS_ADMIN_TOKEN`` goes as Bearer on the admin
routes (``/api/...``), ``BENCHWARMERS_KEY`` on the gateway's (``/v1/...``, ``/bench/...``); neither
is ever printed.
"""

from __future__ import annotations

import json
import os
from collections.abc import AsyncIterator, Mapping
from contextlib import asynccontextmanager
from dataclasses import dataclass, field
from typing import Any

import httpx

DEFAULT_URL = "http://127.0.0.1:8122"
DEFAULT_TIMEOUT = 900.0
CONNECT_TIMEOUT = 10.0
OLLAMA_NAMES = ("chat", "generate", "show", "tags", "version", "ps")


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


@dataclass(frozen=True)
class ClientConfig:
    url: str = DEFAULT_URL
    timeout: float = DEFAULT_TIMEOUT
    admin_token: str | None = field(default=None, repr=False)
    key: str | None = field(default=None, repr=False)
    transport: httpx.AsyncBaseTransport | None = field(default=None, repr=False, compare=False)  # a test seam

    @classmethod
    def from_env(cls, url: str | None = None, env: Mapping[str, str] = os.environ) -> ClientConfig:
        raw_timeout = env.get("BENCHWARMERS_TIMEOUT") or ""
        try:
            timeout = float(raw_timeout) if raw_timeout.strip() else DEFAULT_TIMEOUT
        except ValueError:
            raise UsageError(f"BENCHWARMERS_TIMEOUT must be a number of seconds, not {raw_timeout!r}") from None
        chosen = (url or env.get("BENCHWARMERS_URL") or DEFAULT_URL).strip().rstrip("/")
        if not chosen.startswith(("http://", "https://")):
            raise UsageError(f"the server URL must start with http:// or https:// (got {chosen!r})")
        return cls(chosen, timeout, env.get("BENCHWARMERS_ADMIN_TOKEN") or None, env.get("BENCHWARMERS_KEY") or None)


def is_admin_path(path: str) -> bool:
    """Admin routes are ``/api/...`` except Ollama's names, which belong to the gateway."""
    if not path.startswith("/api/"):
        return False
    return path[len("/api/"):].split("?", 1)[0] not in OLLAMA_NAMES


def server_message(response: httpx.Response) -> str | None:
    """The human message in an error body, in any of the dialects' shapes."""
    try:
        body = response.json()
    except ValueError:
        return None
    error = body.get("error") if isinstance(body, dict) else None
    if isinstance(error, dict):
        return str(error.get("message") or error)
    if isinstance(error, str):
        return error
    if isinstance(body, dict) and isinstance(body.get("errors"), list):
        return "; ".join(str(e) for e in body["errors"])
    return None


class Remote:
    """One server, one ``httpx.AsyncClient``; use as ``async with Remote(config) as remote``."""

    def __init__(self, config: ClientConfig) -> None:
        self.config = config
        self.url = config.url
        self._client = httpx.AsyncClient(
            base_url=config.url, follow_redirects=False, transport=config.transport,
            timeout=httpx.Timeout(config.timeout, connect=CONNECT_TIMEOUT),
            headers={"User-Agent": "benchwarmers-cli", "Accept": "application/json"})

    async def __aenter__(self) -> Remote:
        return self

    async def __aexit__(self, *exc: object) -> None:
        await self._client.aclose()

    def _auth(self, path: str) -> dict[str, str]:
        secret = self.config.admin_token if is_admin_path(path) else self.config.key
        return {"Authorization": f"Bearer {secret}"} if secret else {}

    async def get(self, path: str, params: dict[str, Any] | None = None) -> Any:
        return await self._call("GET", path, params=params)

    async def post(self, path: str, body: dict[str, Any]) -> Any:
        return await self._call("POST", path, body=body)

    async def _call(self, method: str, path: str, *, params: dict[str, Any] | None = None,
                    body: dict[str, Any] | None = None) -> Any:
        clean = {k: v for k, v in (params or {}).items() if v not in (None, False, "")}
        async with self.reaching(method, path):
            response = await self._client.request(method, path, params=clean or None, json=body,
                                                  headers=self._auth(path))
        return self.decode(method, path, response)

    @asynccontextmanager
    async def stream(self, path: str, body: dict[str, Any]) -> AsyncIterator[httpx.Response]:
        """A streamed POST; an error status is raised before the caller reads a line."""
        async with self.reaching("POST", path):
            async with self._client.stream("POST", path, json=body, headers=self._auth(path)) as response:
                if response.status_code >= 400:
                    await response.aread()
                    self.decode("POST", path, response)
                yield response

    @asynccontextmanager
    async def reaching(self, method: str, path: str) -> AsyncIterator[None]:
        """The one boundary where httpx's exceptions become the CLI's."""
        try:
            yield
        except (httpx.ConnectError, httpx.ConnectTimeout) as e:
            raise NoServer(f"no Benchwarmers server at {self.url} ({type(e).__name__}); start one with "
                           "`benchwarmers` (or try `benchwarmers demo`), or point --url / BENCHWARMERS_URL "
                           "at a running one") from e
        except httpx.TimeoutException as e:
            raise CliError(f"{method} {path}: no answer from {self.url} within {self.config.timeout:g} s "
                           "(BENCHWARMERS_TIMEOUT sets the limit)") from e
        except httpx.HTTPError as e:
            raise CliError(f"{method} {path} failed: {type(e).__name__}: {e}") from e

    def decode(self, method: str, path: str, response: httpx.Response) -> Any:
        """The JSON answer, or a ``CliError`` saying what the server refused and why."""
        if response.status_code >= 400:
            raise CliError(self._explain(method, path, response.status_code, server_message(response)))
        try:
            return response.json()
        except ValueError:
            raise CliError(f"{self.url} answered {method} {path} with something that is not JSON; is it a "
                           "Benchwarmers server, and is it older than this CLI?") from None

    def _explain(self, method: str, path: str, status: int, message: str | None) -> str:
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
