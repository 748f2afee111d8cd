"""The one client of a running Benchwarmers server, shared by the faces that run apart from it:
the ``bench`` CLI (``cli/``) and the stdio MCP server (``mcp/stdio.py``).

Plumbing only (httpx and anyio, nothing of the engine), so the same code reaches a server on this
machine or another. One rule for each thing both faces need:

- Settings: ``BENCHWARMERS_URL`` (a trailing ``/`` or ``/v1`` is dropped), else the server this
  environment would start on this machine: ``BENCH_BIND`` and ``BENCH_PORT`` read by ``Settings``,
  as ``benchwarmers serve`` reads them (``served_url``; ``http://127.0.0.1:8122`` when neither is
  set), ``BENCHWARMERS_KEY`` (a gateway key), ``BENCHWARMERS_ADMIN_TOKEN`` (the CLI's admin
  commands), ``BENCHWARMERS_TIMEOUT``. Neither secret is ever printed or put in a ``repr``.
- Auth: ``Authorization: Bearer <admin token>`` on the paths the face calls admin paths, ``Bearer
  <gateway key>`` on every other; no header for a secret that is not set.
- Time: ``BENCHWARMERS_TIMEOUT`` seconds (default 900, at least 1) bound one whole exchange, the
  request through the last byte of the reply, a streamed panel included; connecting gives up
  after 10 s.
- Errors: every failure leaves as one of the ``ClientError`` classes below, with the server's own
  message read out of its error body (``server_message``); each face words them for its readers
  (exit codes for the CLI, tool errors for MCP).
- Panels: ``ServerClient.panel`` streams ``POST /v1/chat/completions`` and hands each piece of
  text, the progress the server sends as data (``bench_progress``: seats on the panel, seats
  done) and each keep-alive to the caller, then returns the final ``bench`` field. Nothing here
  reads a count out of the panel's markdown.
"""

from __future__ import annotations

import json
import os
from collections.abc import AsyncIterator, Awaitable, Callable, Mapping
from contextlib import asynccontextmanager
from dataclasses import dataclass, field
from typing import Any

import anyio
import httpx

from benchwarmers_mcp.settings import DEFAULT_PORT, BadSettings, Settings

DEFAULT_URL = f"http://127.0.0.1:{DEFAULT_PORT}"
# The variables that say where ``benchwarmers serve`` listens (``Settings.bind``, ``Settings.port``).
PLACE_VARIABLES = ("BENCH_BIND", "BENCH_PORT")
DEFAULT_TIMEOUT = 900.0
MIN_TIMEOUT = 1.0
CONNECT_TIMEOUT = 10.0
CHAT_PATH = "/v1/chat/completions"


# ---- failures ----------------------------------------------------------------------------------

class ClientError(Exception):
    """Anything that kept an exchange with the server from giving an answer."""

    def __init__(self, message: str) -> None:
        super().__init__(message)
        self.message = message


class Unreachable(ClientError):
    """Nothing answered at the URL (connection refused, no route, connect timeout)."""

    def __init__(self, url: str, cause: Exception) -> None:
        super().__init__(f"no Benchwarmers server at {url} ({type(cause).__name__})")
        self.url, self.cause = url, cause


class TimedOut(ClientError):
    def __init__(self, method: str, path: str, seconds: float) -> None:
        super().__init__(f"{method} {path} took more than {seconds:g} s")
        self.method, self.path, self.seconds = method, path, seconds


class Broken(ClientError):
    """The exchange failed on the way (a reset connection, a bad URL, a protocol error)."""

    def __init__(self, method: str, path: str, cause: Exception) -> None:
        super().__init__(f"{method} {path} failed: {type(cause).__name__}: {cause}")
        self.method, self.path, self.cause = method, path, cause


class Refused(ClientError):
    """The server answered with an error status; ``reason`` is its own message, when it gave one."""

    def __init__(self, method: str, path: str, status: int, reason: str | None) -> None:
        super().__init__(f"{method} {path}: {reason or 'no reason given'} (HTTP {status})")
        self.method, self.path, self.status, self.reason = method, path, status, reason


class NotJson(ClientError):
    def __init__(self, method: str, path: str) -> None:
        super().__init__(f"{method} {path}: the answer is not JSON")
        self.method, self.path = method, path


class PanelFailed(ClientError):
    """The server reported an error inside a panel's stream, after its 200."""


class PanelCut(ClientError):
    """The panel's stream ended before its final ``bench`` field."""


def server_message(body: Any) -> str | None:
    """The human message of an error body in any of the dialects' shapes (``{"error": {"message"}}``,
    ``{"error": "..."}``, ``{"errors": [...]}``, or a list of those), parsed or not; None when it has none."""
    if isinstance(body, httpx.Response):
        body = body.content
    if isinstance(body, (bytes, str)):
        try:
            body = json.loads(body)
        except ValueError:
            return None
    if isinstance(body, list) and body:
        body = body[0]
    if not isinstance(body, dict):
        return None
    error = body.get("error")
    if isinstance(error, dict):
        return str(error.get("message") or error)
    if isinstance(error, str):
        return error
    if isinstance(body.get("errors"), list):
        return "; ".join(str(e) for e in body["errors"])
    return None


# ---- where the server is -----------------------------------------------------------------------

def local_url(bind: str, port: int) -> str:
    """Where a client on this machine reaches a server listening on ``bind``:``port``: the address
    itself, or loopback for a wildcard bind (``0.0.0.0``, ``::``)."""
    host = bind.strip().strip("[]") or "127.0.0.1"
    host = {"0.0.0.0": "127.0.0.1", "::": "::1"}.get(host, host)
    return f"http://[{host}]:{port}" if ":" in host else f"http://{host}:{port}"


def served_url(env: Mapping[str, str]) -> tuple[str, str | None]:
    """The URL of the server this environment starts on this machine, read by ``Settings`` exactly
    as ``benchwarmers serve`` reads it, and the variables that moved it from the default (None: it
    is the default); ``BadSettings`` when they cannot be used."""
    given = {name: env[name] for name in PLACE_VARIABLES if (env.get(name) or "").strip()}
    settings = Settings.from_env(given)
    moved = [f"{name}={given[name].strip()}" for name in PLACE_VARIABLES if name in given]
    return local_url(settings.bind, settings.port), (", ".join(moved) or None)


# ---- settings ----------------------------------------------------------------------------------

@dataclass(frozen=True)
class ServerConfig:
    """Where the server is and how to reach it. ``problems``: settings that could not be used, each
    said in a sentence (a bad timeout falls back to the default; a face decides whether to go on)."""

    url: str = DEFAULT_URL
    timeout: float = DEFAULT_TIMEOUT
    key: str | None = field(default=None, repr=False)
    admin_token: str | None = field(default=None, repr=False)
    problems: tuple[str, ...] = ()
    source: str = "the default"  # what chose the URL, for a message that says where it looked

    @classmethod
    def from_env(cls, env: Mapping[str, str] = os.environ, url: str | None = None) -> ServerConfig:
        """The settings from ``env``; ``url`` (a ``--url`` flag) wins over ``BENCHWARMERS_URL``, which
        wins over the server this environment would start here (``served_url``)."""
        problems: list[str] = []
        if url or (env.get("BENCHWARMERS_URL") or "").strip():
            source = "--url" if url else "BENCHWARMERS_URL"
            picked = url or env.get("BENCHWARMERS_URL") or ""
        else:
            try:
                picked, moved = served_url(env)
            except BadSettings as e:
                problems += e.problems
                picked, moved = DEFAULT_URL, None
            source = moved or "the default"
        chosen = picked.strip().rstrip("/").removesuffix("/v1")
        if not chosen.startswith(("http://", "https://")):
            problems.append(f"the server URL must start with http:// or https:// (got {chosen!r})")
        raw = (env.get("BENCHWARMERS_TIMEOUT") or "").strip()
        timeout = DEFAULT_TIMEOUT
        if raw:
            try:
                timeout = max(MIN_TIMEOUT, float(raw))
            except ValueError:
                problems.append(f"BENCHWARMERS_TIMEOUT must be a number of seconds, not {raw!r}")
        return cls(chosen, timeout, _secret(env, "BENCHWARMERS_KEY"), _secret(env, "BENCHWARMERS_ADMIN_TOKEN"),
                   tuple(problems), source)

    def auth(self, admin: bool) -> dict[str, str]:
        """The one auth header rule: the admin token on admin paths, the gateway key elsewhere."""
        secret = self.admin_token if admin else self.key
        return {"Authorization": f"Bearer {secret}"} if secret else {}


def _secret(env: Mapping[str, str], name: str) -> str | None:
    return (env.get(name) or "").strip() or None


# ---- the client --------------------------------------------------------------------------------

@dataclass(frozen=True)
class PanelUpdate:
    """One step of a streamed panel: text to show, how far the panel is, or a keep-alive."""

    text: str = ""
    seats: int | None = None  # seats on the panel, as the server seated it
    done: int | None = None  # seats finished so far (answered, empty or failed)
    idle: bool = False  # a keep-alive: the server is still working


def _never_admin(path: str) -> bool:
    return False


class ServerClient:
    """One server, one ``httpx.AsyncClient``: ``async with ServerClient(config) as client``.

    ``admin_path`` says which paths take the admin token (the CLI's rule); by default none do.
    ``transport`` replaces the network (an app in-process, in tests).
    """

    def __init__(self, config: ServerConfig, *, admin_path: Callable[[str], bool] = _never_admin,
                 agent: str = "benchwarmers", transport: httpx.AsyncBaseTransport | None = None) -> None:
        self.config = config
        self.url = config.url
        self._admin_path = admin_path
        self._http = httpx.AsyncClient(
            base_url=config.url, follow_redirects=False, transport=transport,
            timeout=httpx.Timeout(config.timeout, connect=CONNECT_TIMEOUT),
            headers={"User-Agent": agent, "Accept": "application/json"})

    async def __aenter__(self) -> ServerClient:
        return self

    async def __aexit__(self, *exc: object) -> None:
        await self._http.aclose()

    def headers_for(self, path: str) -> dict[str, str]:
        return self.config.auth(self._admin_path(path))

    async def get(self, path: str, params: Mapping[str, Any] | None = None) -> Any:
        return await self.request("GET", path, params=params)

    async def post(self, path: str, body: Mapping[str, Any]) -> Any:
        return await self.request("POST", path, body=body)

    async def request(self, method: str, path: str, *, params: Mapping[str, Any] | None = None,
                      body: Mapping[str, Any] | None = None) -> Any:
        """The JSON answer. A query parameter that is None, False or empty is not sent."""
        clean = {k: v for k, v in (params or {}).items() if v not in (None, False, "")}
        async with self._exchange(method, path):
            response = await self._http.request(method, path, params=clean or None, json=body,
                                                headers=self.headers_for(path))
        return _decode(method, path, response)

    @asynccontextmanager
    async def stream(self, method: str, path: str, body: Mapping[str, Any],
                     headers: Mapping[str, str] | None = None) -> AsyncIterator[AsyncIterator[str]]:
        """A streamed request's lines; an error status is raised (as ``Refused``) before any line.
        ``headers``: more headers for this request (never the auth header: that is the path's)."""
        async with self._exchange(method, path):
            async with self._http.stream(method, path, json=body,
                                         headers={**(headers or {}), **self.headers_for(path)}) as response:
                if response.status_code >= 400:
                    await response.aread()
                    _decode(method, path, response)
                yield response.aiter_lines()

    async def panel(self, body: Mapping[str, Any], on_update: Callable[[PanelUpdate], Awaitable[None]], *,
                    headers: Mapping[str, str] | None = None) -> dict[str, Any]:
        """Stream a panel (``body`` is a chat completion request with ``"stream": true``): each piece,
        progress step and keep-alive goes to ``on_update``; returns the final ``bench`` field."""
        bench: dict[str, Any] | None = None
        async with self.stream("POST", CHAT_PATH, body, headers) as lines:
            async for line in lines:
                if line.startswith(":"):
                    await on_update(PanelUpdate(idle=True))
                    continue
                event = _event(line)
                if event is None:
                    continue
                if "error" in event:
                    raise PanelFailed(server_message(event) or "no reason given")
                if isinstance(event.get("bench"), dict):
                    bench = event["bench"]
                update = _update(event)
                if update is not None:
                    await on_update(update)
        if bench is None:
            raise PanelCut("the panel's stream ended before the panel did (no bench field)")
        return bench

    @asynccontextmanager
    async def _exchange(self, method: str, path: str) -> AsyncIterator[None]:
        """The one boundary where httpx's exceptions, and the timeout, become ``ClientError``s."""
        try:
            with anyio.fail_after(self.config.timeout):
                yield
        except (httpx.ConnectError, httpx.ConnectTimeout) as e:
            raise Unreachable(self.url, e) from e
        except (TimeoutError, httpx.TimeoutException) as e:
            raise TimedOut(method, path, self.config.timeout) from e
        except httpx.HTTPError as e:
            raise Broken(method, path, e) from e


def _decode(method: str, path: str, response: httpx.Response) -> Any:
    if response.status_code >= 400:
        raise Refused(method, path, response.status_code, server_message(response))
    try:
        return response.json()
    except ValueError:
        raise NotJson(method, path) from None


def _event(line: str) -> dict[str, Any] | None:
    """An SSE ``data:`` line's JSON object (None for anything else: other fields, ``[DONE]``)."""
    if not line.startswith("data:"):
        return None
    data = line[len("data:"):].strip()
    if not data or data == "[DONE]":
        return None
    try:
        event = json.loads(data)
    except ValueError:
        return None
    return event if isinstance(event, dict) else None


def _update(event: dict[str, Any]) -> PanelUpdate | None:
    text = "".join((c.get("delta") or {}).get("content") or "" for c in event.get("choices") or ()
                   if isinstance(c, dict))
    progress = event.get("bench_progress")
    if not isinstance(progress, dict):
        return PanelUpdate(text) if text else None
    seats, done = progress.get("seats"), progress.get("done")
    return PanelUpdate(text, seats if isinstance(seats, int) else None, done if isinstance(done, int) else None)
