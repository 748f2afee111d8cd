"""What every dialect shares, so that each dialect module holds only its own shapes.

- the ask flow: read the body, parse it into an ``Ask``, resolve the collection (scope first) and
  its reply mode once, then answer as a panel or a route turn, streamed or whole (``handle_ask``);
- a request's collection name, reply mode and nominees, whatever the dialect (``named``);
- a panel as text pieces in finish order, for a dialect to frame (``pieces``, ``framed``), the
  headers every panel reply carries, and its token counts (``panel_usage``, ``count``);
- a route turn started from the HTTP request (``begin``), its headers and streamed response, and
  its text as it comes for the dialects that send each tool call whole at the end (``texts``).

Errors are rendered by the dialect's own ``render_error`` (through ``inbound.guarded``), never as a
bare 500.
"""

from __future__ import annotations

import json
import logging
import re
import time
from collections.abc import AsyncIterator, Awaitable, Callable
from dataclasses import dataclass, replace
from typing import Any, cast

from starlette.requests import Request
from starlette.responses import Response

from benchwarmers_mcp.context import Context
from benchwarmers_mcp.engine import collections, report, route
from benchwarmers_mcp.engine.panel import MergeDone, PanelRun, SeatDone, start_panel
from benchwarmers_mcp.engine.route import RouteTurn
from benchwarmers_mcp.errors import BadRequest, BenchError, Unsupported
from benchwarmers_mcp.gateway.sse import KEEPALIVE_COMMENT
from benchwarmers_mcp.inbound import RenderError, access_of, context, key_name, read_json
from benchwarmers_mcp.messages import (
    Ask,
    Reply,
    TextDelta,
    ToolCall,
    Usage,
    estimate_text_tokens,
    estimate_tokens,
)
from benchwarmers_mcp.store import collections as collection_store
from benchwarmers_mcp.store import config_version
from benchwarmers_mcp.store.collections import Collection
from benchwarmers_mcp.streamed import Streamed

log = logging.getLogger("benchwarmers.gateway")

Parse = Callable[[dict[str, Any], str], Ask]
RespondPanel = Callable[[PanelRun, Ask, dict[str, Any], Context, float], Response]
RespondRoute = Callable[[Context, Ask, dict[str, Any], Collection, Request], Awaitable[Response]]
# An agent's own session id, when it sends one: Claude Code's, then Codex's.
SESSION_HEADERS = ("x-claude-code-session-id", "session-id")


@dataclass(frozen=True)
class Dialect:
    name: str
    parse: Parse
    respond_panel: RespondPanel
    render_error: RenderError
    respond_route: RespondRoute | None = None


# ---- the ask flow ------------------------------------------------------------------------------

def named(body: dict[str, Any], model: Any) -> tuple[str, Reply | None, tuple[str, ...]]:
    """The collection ``model`` names, the reply mode the request asks for (the body's ``bench``
    first, then the model's suffix; None leaves it to the collection) and ``with`` (model aliases).
    400 when any of them is malformed."""
    collection, suffix = collections.split_model(model)
    bench = body.get("bench")
    reply = None
    if bench is not None:
        if not isinstance(bench, dict):
            raise BadRequest("bench must be an object, e.g. {\"reply\": \"merged\"}")
        reply = bench.get("reply")
        if reply is not None and reply not in collections.SUFFIXES:
            raise BadRequest("bench.reply must be \"all\", \"merged\" or \"route\"")
    nominees = body.get("with")
    if nominees is None and isinstance(bench, dict):
        nominees = bench.get("with")
    if nominees is None:
        nominees = []
    if isinstance(nominees, str):
        nominees = [n for n in nominees.split(",") if n.strip()]
    if not isinstance(nominees, list) or not all(isinstance(n, str) and n.strip() for n in nominees):
        raise BadRequest("with must be a list of model aliases")
    return collection, cast("Reply | None", reply) or suffix, tuple(n.strip() for n in nominees)


async def resolve_for(request: Request, name: str) -> Collection:
    """A collection the caller may use, by name (403 out of the key's scope, 404 unknown)."""
    access_of(request).check(name)
    return await collection_store.resolve(context(request).db, name)


async def listed(request: Request) -> list[collections.Listed]:
    """The collections under every reply mode, limited to the caller's key scope."""
    return collections.with_modes(await collections.entries(context(request).db, only=access_of(request).visible()))


# The User-Agents of Benchwarmers' own clients: the CLI (``cli/remote.py``) and the stdio MCP server
# (``mcp/stdio.py``, which names the MCP client it serves in its comment: ``(client: <name>/<version>)``).
OWN_AGENTS = {"benchwarmers-cli": "cli", "benchwarmers-mcp": "mcp"}
MCP_CLIENT = re.compile(r"\(client: ([^()]{1,120})\)")


def origin(user_agent: str) -> tuple[str, str]:
    """Who asks, from the User-Agent: ``source`` (``cli`` and ``mcp`` for Benchwarmers' own clients,
    else ``gateway``) and ``client``, the caller's product (the agent up to its first comment:
    ``OpenAI/Python 2.3.0``, ``claude-cli/2.1.3``; for the stdio MCP server, the MCP client it serves)."""
    agent = " ".join(user_agent.split())[:300]
    product = agent.split(" (", 1)[0].strip()[:120]
    source = OWN_AGENTS.get(product.split("/", 1)[0].lower(), "gateway")
    if source == "mcp":
        served = MCP_CLIENT.search(agent)
        product = served.group(1).strip() if served else product
    return source, product


async def handle_ask(request: Request, dialect: Dialect, body: dict[str, Any] | None = None) -> Response:
    ctx = context(request)
    started = time.perf_counter()
    if body is None:
        body = await read_json(request, ctx.settings.max_body)
    source, client = origin(request.headers.get("user-agent") or "")
    ask = replace(dialect.parse(body, key_name(request)), source=source, client=client)
    # one snapshot of the configuration for the whole ask: its reads share one stamp read
    with config_version.shared(ctx.db):
        collection = await resolve_for(request, ask.collection)
        mode = collections.reply_mode(ask, collection)
        if mode == "route":
            if dialect.respond_route is None:
                raise Unsupported(f"route mode is not available in the {dialect.name} format yet")
            return await dialect.respond_route(ctx, ask, body, collection, request)
        run = await start_panel(ctx, ask, collection, mode, access=access_of(request))
    if ask.stream:  # the overhead is all there is before the 200
        return dialect.respond_panel(run, ask, body, ctx, (time.perf_counter() - started) * 1000)
    await run.wait()
    overhead = time.perf_counter() - started - run.upstream_seconds
    return dialect.respond_panel(run, ask, body, ctx, max(0.0, overhead) * 1000)


# ---- panels ------------------------------------------------------------------------------------

def reply_headers(run: PanelRun, overhead_ms: float) -> dict[str, str]:
    """The headers every panel reply carries, whatever the dialect."""
    return {"X-Bench-Panel": run.id, "X-Bench-Overhead-Ms": f"{overhead_ms:.1f}"}


async def pieces(run: PanelRun, keepalive: float | None) -> AsyncIterator[str | None]:
    """A panel as text pieces, the same for every dialect: the heading, each seat's section the
    moment it finishes, the footer (or, merged, the one merged piece), with ``None`` whenever the
    keep-alive interval passes idle. Dialects only frame the pieces."""
    merged = run.reply == "merged"
    if not merged:
        yield report.heading(run)
    async for event in run.events(keepalive):
        if isinstance(event, SeatDone):
            run.relayed = event.answered  # the progress on this piece: seats done when *it* finished
        if event is None:
            yield None
        elif isinstance(event, SeatDone) and not merged:
            yield report.section(run, event.record)
        elif isinstance(event, MergeDone):
            yield report.merged_content(run)
    if not merged:
        yield report.footer(run)


async def framed(run: PanelRun, keepalive: float | None, frame: Callable[[str], bytes], sent: list[str],
                 idle: bytes = KEEPALIVE_COMMENT) -> AsyncIterator[bytes]:
    """The pieces as a dialect frames them, ``idle`` for each keep-alive; each piece sent is added
    to ``sent`` (the dialect's closing frame counts its tokens)."""
    async for piece in pieces(run, keepalive):
        if piece is None:
            yield idle
            continue
        sent.append(piece)
        yield frame(piece)


def as_bench_error(error: Exception) -> BenchError:
    """What a stream reports after the 200: a BenchError as it is, anything else as internal."""
    if isinstance(error, BenchError):
        return error
    log.error("a panel stream failed after the 200", exc_info=error)
    return BenchError("internal error in the gateway while streaming the panel; the server log has the details")


def panel_usage(run: PanelRun, ask: Ask, answer_text: str) -> Usage:
    """The panel's token counts: what the members said they used when every seat reported real
    usage, else the gateway's estimate (characters / 4 plus 10%, an image 2,500)."""
    real = run.usage
    if real.total and not real.estimated:
        return real
    return Usage(estimate_tokens(ask), estimate_text_tokens(answer_text), estimated=True)


def count(ask: Ask) -> int:
    """The count routes' answer: the prompt, tool definitions and tool traffic included. No model
    is ever called to count."""
    return estimate_tokens(ask, count_tools=True)


async def counted(request: Request, ask: Ask) -> int:
    """A count route's answer for a collection the caller may use (404 when unknown, 403 out of scope)."""
    await resolve_for(request, ask.collection)
    return count(ask)


# ---- route turns -------------------------------------------------------------------------------

async def begin(ctx: Context, ask: Ask, collection: Collection, request: Request) -> RouteTurn:
    """Start the turn and wait for a member to commit: a whole turn waits for the whole answer, a
    streamed one at most ``stream_wait`` seconds (then the 200 goes and keep-alives follow)."""
    session = next((request.headers[h] for h in SESSION_HEADERS if request.headers.get(h)), None) or ask.session_hint
    turn = await route.start_turn(ctx, ask, collection, access=access_of(request), session=session,
                                  hold_all=not ask.stream, inline=not ask.stream)
    await turn.ready(route.tuning(ctx).stream_wait if ask.stream else None)
    return turn


def route_headers(turn: RouteTurn) -> dict[str, str]:
    out = {"X-Bench-Conversation": turn.conversation}
    if turn.alias:
        out["X-Bench-Model"] = turn.alias
    return out


def streaming(turn: RouteTurn, frames: AsyncIterator[bytes], media_type: str,
              extra_headers: dict[str, str] | None = None) -> Streamed:
    """A streamed turn's response. Closing the turn afterwards stops the member's call even when
    the agent hung up before a single frame was sent."""
    async def close() -> None:
        turn.close()

    return Streamed(coalesced(turn, frames), media_type=media_type,
                    headers={**route_headers(turn), **(extra_headers or {})}, on_close=close)


async def coalesced(turn: RouteTurn, frames: AsyncIterator[bytes]) -> AsyncIterator[bytes]:
    """The dialect's frames, those the turn already has the events for joined into one write: a
    member's events often come several to a read (and the held ones all at the commit), and each
    write was a trip through the ASGI layers and a system call. A frame that must wait goes alone,
    so nothing is held back."""
    iterator = aiter(frames)
    try:
        async for frame in iterator:
            if turn.waiting():
                yield frame
                continue
            batch = [frame]
            while not turn.waiting():
                try:
                    batch.append(await anext(iterator))
                except StopAsyncIteration:
                    break
            yield b"".join(batch)
    finally:
        close = getattr(iterator, "aclose", None)
        if close is not None:
            await close()


def arguments_object(call: ToolCall) -> dict[str, Any]:
    """A tool call's arguments as an object (Anthropic, Gemini and Ollama want one, not JSON text)."""
    try:
        value = json.loads(call.arguments or "{}")
    except ValueError:
        return {"input": call.arguments}
    return value if isinstance(value, dict) else {"input": value}


async def texts(turn: RouteTurn, keepalive: float | None) -> AsyncIterator[str | None]:
    """A turn's text as it comes (``None`` for a keep-alive), for the dialects that stream text but
    send each tool call whole when the turn ends; after the last piece ``turn.answer`` holds the
    whole turn (its tool calls, finish reason and the member's usage)."""
    async for event in turn.events(keepalive):
        if event is None:
            yield None
        elif isinstance(event, TextDelta) and event.text:
            yield event.text


__all__ = ["OWN_AGENTS", "Dialect", "Parse", "RespondPanel", "RespondRoute", "SESSION_HEADERS", "arguments_object",
           "as_bench_error", "begin", "coalesced", "count", "counted", "framed", "handle_ask", "listed", "named", "origin", "panel_usage",
           "pieces", "reply_headers", "resolve_for", "route_headers", "streaming", "texts"]
