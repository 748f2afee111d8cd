"""``benchwarmers mcp``: a stdio MCP server that forwards every tool call to a running Benchwarmers.

A face over the one client of a running server (``benchwarmers_mcp/client.py``), configured by
the environment (read once, in ``main``): ``BENCHWARMERS_URL``, ``BENCHWARMERS_KEY`` (sent as
``Authorization: Bearer``) and ``BENCHWARMERS_TIMEOUT`` (seconds one tool call may take, default
900). ``ask`` streams ``POST /v1/chat/completions`` and reports progress from the counts the server
sends with each piece (and on every keep-alive); ``verdict`` posts ``/bench/verdict``;
``list_collections`` reads ``/v1/models``; ``pending_verdicts`` reads the transcript here and asks
``/bench/remind``, so the reminded set stays in the server's store (called without the hook's
fields, it lists the owed panels from ``/bench/panels``). Its User-Agent names the MCP client it
serves, so the server records the panels it asks as asked over MCP, by that client.

stdout carries nothing but the protocol (the SDK moves it off fd 1); logs go to stderr. With no
server it still starts and lists the tools; each call says how to start one.
"""

from __future__ import annotations

import logging
import os
import sys
from collections.abc import Iterator, Mapping
from contextlib import contextmanager
from typing import Any
from urllib.parse import quote

import anyio

from benchwarmers_mcp import __version__, client
from benchwarmers_mcp.client import PanelUpdate, ServerClient, ServerConfig
from benchwarmers_mcp.mcp.tools import (
    PENDING_PANELS,
    AskArgs,
    PendingArgs,
    Progress,
    ToolFailure,
    VerdictArgs,
    build_server,
)

log = logging.getLogger("benchwarmers.mcp")
AGENT = "benchwarmers-mcp"  # its User-Agent's product: panels it asks are recorded as asked over MCP


def config_from_env(env: Mapping[str, str]) -> ServerConfig:
    """The client's settings. The server must start whatever they say (an MCP client shows little of
    a launch that failed), so a problem is logged on stderr and the default stands in for a bad timeout."""
    config = ServerConfig.from_env(env)
    for problem in config.problems:
        log.warning("%s (going on with the server %s and a timeout of %g s)", problem, config.url, config.timeout)
    return config


class RemoteTools:
    """The ``mcp_tools.Backend`` of the stdio server: a running Benchwarmers, over the shared client."""

    def __init__(self, server: ServerClient) -> None:
        self.server = server
        self.url = server.url

    def not_running(self) -> str:
        return (f"Benchwarmers is not running at {self.url}. Start it with `benchwarmers` (or try it with "
                f"`benchwarmers demo`), or set BENCHWARMERS_URL to a running server.")

    @contextmanager
    def _mapped(self) -> Iterator[None]:
        """The one place the client's failures become the text an agent reads."""
        try:
            yield
        except client.ClientError as e:
            raise ToolFailure(self._explain(e)) from None

    def _explain(self, error: client.ClientError) -> str:
        if isinstance(error, client.Unreachable):
            return self.not_running()
        if isinstance(error, client.TimedOut):
            return (f"Benchwarmers did not finish {error.method} {error.path} within {error.seconds:.0f} s; "
                    f"a long panel needs a larger BENCHWARMERS_TIMEOUT (seconds)")
        if isinstance(error, client.Broken):
            return f"Benchwarmers at {self.url} could not be reached: {error.cause}"
        if isinstance(error, client.NotJson):
            return (f"Benchwarmers sent an unreadable reply to {error.method} {error.path}; is {self.url} a "
                    f"Benchwarmers server?")
        if isinstance(error, client.Refused):
            return (f"Benchwarmers refused {error.method} {error.path} ({error.status}): "
                    f"{error.reason or 'no details'}")
        if isinstance(error, client.PanelFailed):
            return f"Benchwarmers failed during the panel: {error.message}"
        if isinstance(error, client.PanelCut):
            return ("the panel stream ended before the panel finished; the seats are still recorded on the "
                    "server (see its dashboard), or ask again")
        return error.message

    async def _json(self, method: str, path: str, body: dict[str, Any] | None = None) -> Any:
        with self._mapped():
            return await self.server.request(method, path, body=body)

    async def collections(self, request: Any) -> list[dict[str, Any]]:
        data = await self._json("GET", "/v1/models")
        entries = [m for m in data.get("data") or [] if ":" not in str(m.get("id", ""))]
        for entry in entries:  # each member's rating, as the HTTP server's list carries it
            name = str(entry.get("id", "")).removeprefix("bench/")
            rated = await self._json("GET", f"/bench/ratings?collection={quote(name)}")
            entry["ratings"] = {m["alias"]: {"mean": m["mean"], "interval": m["interval"],
                                             "verdicts": round(m["weight"], 1), "status": m["status"]}
                                for m in rated.get("models") or () if m.get("member")}
            entry["statuses"] = {m["alias"]: m["model"] for m in rated.get("models") or ()
                                 if m.get("member") and m.get("model")}
        return entries

    async def ask(self, args: AskArgs, request: Any, progress: Progress,
                  client: str = "") -> tuple[str, dict[str, Any]]:
        messages = [{"role": "system", "content": args.system}] if args.system else []
        body: dict[str, Any] = {"model": args.collection, "stream": True,
                                "messages": [*messages, {"role": "user", "content": args.prompt}]}
        if args.merged is not None:
            body["bench"] = {"reply": "merged" if args.merged else "all"}
        if args.with_:
            body["with"] = args.with_
        pieces: list[str] = []
        reported: tuple[int, int] | None = None

        async def relay(update: PanelUpdate) -> None:
            nonlocal reported
            if update.idle:
                await progress.tick()
                return
            pieces.append(update.text)
            if update.seats is not None and update.done is not None and (update.done, update.seats) != reported:
                reported = (update.done, update.seats)
                await progress.seat(update.done, update.seats)

        # the MCP client this process serves, named in the User-Agent's comment (``gateway.face.origin``)
        agent = f"{AGENT}/{__version__}" + (f" (client: {' '.join(client.split())})" if client else "")
        with self._mapped():
            bench = await self.server.panel(body, relay, headers={"User-Agent": agent})
        return "".join(pieces), bench

    async def verdict(self, args: VerdictArgs, request: Any) -> tuple[dict[str, Any], bool]:
        data = await self._json("POST", "/bench/verdict", args.body())
        return data.get("recorded") or {}, bool(data.get("written", True))

    async def remind(self, session: str, calls: list[str], request: Any) -> list[str]:
        data = await self._json("POST", "/bench/remind", {"session": session, "calls": calls})
        return list(data.get("due") or [])

    async def owed_panels(self, args: PendingArgs, request: Any) -> tuple[list[dict[str, Any]], int]:
        query = {"owed": "1", "limit": str(args.limit or PENDING_PANELS)}
        if args.collection:
            query["collection"] = args.collection
        with self._mapped():
            listed = await self.server.get("/bench/panels", query)
            details = [await self.server.get(f"/bench/panels/{quote(p['id'], safe='')}")
                       for p in listed.get("panels") or ()]
        return details, int(listed.get("owed_total") or 0)


async def serve(config: ServerConfig) -> None:
    async with ServerClient(config, agent=f"{AGENT}/{__version__}") as server:
        await build_server(RemoteTools(server), __version__).run_stdio_async()


def main() -> int:
    logging.basicConfig(stream=sys.stderr, level=logging.WARNING, format="benchwarmers mcp: %(message)s")
    try:
        anyio.run(serve, config_from_env(os.environ))
    except KeyboardInterrupt:
        pass
    return 0
