"""``benchwarmers mcp``: a stdio MCP server that forwards every tool call to a running Benchwarmers.

A thin HTTP client, configured by its own environment (read once, in ``main``):
``BENCHWARMERS_URL`` (default ``http://127.0.0.1:8122``; a trailing ``/v1`` is dropped),
``BENCHWARMERS_KEY`` (sent as ``Authorization: Bearer``) and ``BENCHWARMERS_TIMEOUT`` (seconds for
one tool call, default 900). ``ask`` streams ``POST /v1/chat/completions`` and reports progress
as each seat's section arrives (and on every keep-alive); ``verdict`` posts ``/bench/verdict``;
``list_collections`` reads ``/v1/models``; ``pending_verdicts`` reads the transcript here and asks
``/bench/remind``, so the reminded set stays in the server's store.

stdout carries nothing but the protocol (the SDK moves it off fd 1); logs go to stderr. With no
server it still starts and lists the tools; each call says how to start one.
"""

from __future__ import annotations

import json
import logging
import os
import re
import sys
from collections.abc import AsyncIterator, Iterator, Mapping
from contextlib import asynccontextmanager, contextmanager
from dataclasses import dataclass
from typing import Any

import anyio
import httpx

from benchwarmers_mcp import __version__
from benchwarmers_mcp.mcp.tools import AskArgs, Progress, ToolFailure, VerdictArgs, build_server
from benchwarmers_mcp.providers.base import error_message

log = logging.getLogger("benchwarmers.mcp")

DEFAULT_URL = "http://127.0.0.1:8122"
DEFAULT_TIMEOUT = 900.0
HEADING = re.compile(r"· (\d+) members? \+ (\d+) explorers?")


@dataclass(frozen=True)
class Remote:
    """Where the running server is, and how to reach it."""

    url: str = DEFAULT_URL
    key: str | None = None
    timeout: float = DEFAULT_TIMEOUT

    @classmethod
    def from_env(cls, env: Mapping[str, str]) -> Remote:
        url = (env.get("BENCHWARMERS_URL") or DEFAULT_URL).strip().rstrip("/")
        if url.endswith("/v1"):
            url = url[: -len("/v1")]
        try:
            timeout = float(env.get("BENCHWARMERS_TIMEOUT") or DEFAULT_TIMEOUT)
        except ValueError:
            log.warning("BENCHWARMERS_TIMEOUT is not a number; using %s s", DEFAULT_TIMEOUT)
            timeout = DEFAULT_TIMEOUT
        return cls(url, (env.get("BENCHWARMERS_KEY") or "").strip() or None, max(1.0, timeout))

    def headers(self) -> dict[str, str]:
        return {"Authorization": f"Bearer {self.key}"} if self.key else {}

    def client(self) -> httpx.AsyncClient:
        return httpx.AsyncClient(base_url=self.url, headers=self.headers(), follow_redirects=False,
                                 timeout=httpx.Timeout(self.timeout, connect=10.0))

    def not_running(self) -> str:
        return (f"Benchwarmers is not running at {self.url}. Start it with `benchwarmers` (or try it with "
                f"`benchwarmers demo`), or set BENCHWARMERS_URL to a running server.")


class PanelStream:
    """Reads the streamed chat completion of a panel: content pieces, progress, the ``bench`` field."""

    def __init__(self, progress: Progress) -> None:
        self.progress = progress
        self.pieces: list[str] = []
        self.bench: dict[str, Any] | None = None
        self.seats = 0

    async def feed(self, line: str) -> None:
        if line.startswith(":"):
            await self.progress.tick()
            return
        if not line.startswith("data:"):
            return
        payload = line[len("data:"):].strip()
        if not payload or payload == "[DONE]":
            return
        data = json.loads(payload)
        if not isinstance(data, dict):
            return
        if "error" in data:
            raise ToolFailure(f"Benchwarmers failed during the panel: {error_message(payload)}")
        if data.get("bench") is not None:
            self.bench = data["bench"]
        for choice in data.get("choices") or []:
            text = (choice.get("delta") or {}).get("content")
            if text:
                await self._piece(text)

    async def _piece(self, text: str) -> None:
        self.pieces.append(text)
        heading = HEADING.search(text.split("\n", 1)[0]) if text.startswith("Bench ") else None
        if heading:
            await self.progress.seat(0, int(heading[1]) + int(heading[2]))
        elif text.startswith("## "):
            self.seats += 1
            await self.progress.seat(self.seats)

    def result(self) -> tuple[str, dict[str, Any]]:
        if self.bench is None:
            raise ToolFailure("the panel stream ended before the panel finished; the seats are still recorded "
                              "on the server (see its dashboard), or ask again")
        return "".join(self.pieces), self.bench


class RemoteTools:
    """The ``mcp_tools.Backend`` of the stdio server: a running Benchwarmers, over HTTP."""

    def __init__(self, remote: Remote) -> None:
        self.remote = remote

    @contextmanager
    def _mapped(self, method: str, path: str) -> Iterator[None]:
        """The one boundary where HTTP failures become the text an agent reads."""
        try:
            with anyio.fail_after(self.remote.timeout):
                yield
        except httpx.ConnectError:
            raise ToolFailure(self.remote.not_running()) from None
        except (TimeoutError, httpx.TimeoutException):
            raise ToolFailure(f"Benchwarmers did not finish {method} {path} within {self.remote.timeout:.0f} s; "
                              f"a long panel needs a larger BENCHWARMERS_TIMEOUT (seconds)") from None
        except httpx.HTTPError as e:
            raise ToolFailure(f"Benchwarmers at {self.remote.url} could not be reached: {e}") from None
        except ValueError:
            raise ToolFailure(f"Benchwarmers sent an unreadable reply to {method} {path}; is "
                              f"{self.remote.url} a Benchwarmers server?") from None

    def _refused(self, method: str, path: str, response: httpx.Response) -> ToolFailure:
        return ToolFailure(f"Benchwarmers refused {method} {path} ({response.status_code}): "
                           f"{error_message(response.content) or 'no details'}")

    async def _json(self, method: str, path: str, body: dict[str, Any] | None = None) -> Any:
        with self._mapped(method, path):
            async with self.remote.client() as client:
                response = await client.request(method, path, json=body)
            if response.status_code >= 400:
                raise self._refused(method, path, response)
            return response.json()

    async def collections(self, request: Any) -> list[dict[str, Any]]:
        data = await self._json("GET", "/v1/models")
        return [m for m in data.get("data") or [] if ":" not in str(m.get("id", ""))]

    async def ask(self, args: AskArgs, request: Any, progress: Progress) -> tuple[str, dict[str, Any]]:
        path = "/v1/chat/completions"
        messages = [{"role": "system", "content": args.system}] if args.system else []
        body: dict[str, Any] = {"model": args.collection, "stream": True,
                                "messages": [*messages, {"role": "user", "content": args.prompt}]}
        if args.merged is not None:
            body["bench"] = {"reply": "merged" if args.merged else "all"}
        if args.with_:
            body["with"] = args.with_
        reader = PanelStream(progress)
        with self._mapped("POST", path):
            async with self._stream("POST", path, body) as lines:
                async for line in lines:
                    await reader.feed(line)
        return reader.result()

    @asynccontextmanager
    async def _stream(self, method: str, path: str, body: dict[str, Any]) -> AsyncIterator[AsyncIterator[str]]:
        async with self.remote.client() as client, client.stream(method, path, json=body) as response:
            if response.status_code >= 400:
                await response.aread()
                raise self._refused(method, path, response)
            yield response.aiter_lines()

    async def verdict(self, args: VerdictArgs, request: Any) -> tuple[dict[str, Any], bool]:
        data = await self._json("POST", "/bench/verdict", args.body())
        return data.get("recorded") or {}, bool(data.get("written", True))

    async def remind(self, session: str, calls: list[str], request: Any) -> list[str]:
        data = await self._json("POST", "/bench/remind", {"session": session, "calls": calls})
        return list(data.get("due") or [])


def main() -> int:
    logging.basicConfig(stream=sys.stderr, level=logging.WARNING, format="benchwarmers mcp: %(message)s")
    server = build_server(RemoteTools(Remote.from_env(os.environ)), __version__)
    try:
        anyio.run(server.run_stdio_async)
    except KeyboardInterrupt:
        pass
    return 0
