"""What every dialect's route responder shares: starting the turn from the HTTP request, the
headers it carries, and ``Relay`` for the dialects that stream text as it comes but emit each
tool call whole when the turn ends (Anthropic, Responses, Gemini, Ollama)."""

from __future__ import annotations

import json
from collections.abc import AsyncIterator
from typing import Any

from starlette.background import BackgroundTask
from starlette.requests import Request
from starlette.responses import StreamingResponse

from benchwarmers_mcp.access.guard import access_of
from benchwarmers_mcp.context import Context
from benchwarmers_mcp.engine import route
from benchwarmers_mcp.engine.route import RouteTurn
from benchwarmers_mcp.messages import Answer, AnswerBuilder, Ask, TextDelta, ToolCall
from benchwarmers_mcp.store.collections import Collection

SESSION_HEADER = "x-claude-code-session-id"


async def begin(ctx: Context, ask: Ask, collection: Collection, request: Request) -> RouteTurn:
    """Start the turn and wait for a member to commit: a whole turn waits for the whole answer, a
    streamed one at most ``stream_wait`` seconds (then the 200 goes and keep-alives follow)."""
    session = request.headers.get(SESSION_HEADER) or ask.session_hint
    turn = await route.start_turn(ctx, ask, collection, access=access_of(request), session=session,
                                  hold_all=not ask.stream)
    await turn.ready(route.tuning(ctx).stream_wait if ask.stream else None)
    return turn


def headers(turn: RouteTurn) -> dict[str, str]:
    out = {"X-Bench-Conversation": turn.conversation}
    if turn.alias:
        out["X-Bench-Model"] = turn.alias
    return out


def streaming(turn: RouteTurn, frames: AsyncIterator[bytes], media_type: str,
              extra_headers: dict[str, str] | None = None) -> StreamingResponse:
    """A streamed turn's response. Closing the turn afterwards stops the member's call even when
    the agent hung up before a single frame was sent."""
    return StreamingResponse(frames, media_type=media_type, headers={**headers(turn), **(extra_headers or {})},
                             background=BackgroundTask(turn.close))


def arguments_object(call: ToolCall) -> dict[str, Any]:
    """A tool call's arguments as an object (Anthropic, Gemini and Ollama want one, not JSON text)."""
    try:
        value = json.loads(call.arguments or "{}")
    except ValueError:
        return {"input": call.arguments}
    return value if isinstance(value, dict) else {"input": value}


class Relay:
    """A turn's text as it comes (``None`` for a keep-alive); once the text is done, ``answer``
    holds the whole turn: its tool calls, finish reason and the member's usage."""

    def __init__(self, turn: RouteTurn) -> None:
        self.turn = turn
        self.builder = AnswerBuilder()

    async def text(self, keepalive: float | None) -> AsyncIterator[str | None]:
        async for event in self.turn.events(keepalive):
            if event is None:
                yield None
                continue
            self.builder.add(event)
            if isinstance(event, TextDelta) and event.text:
                yield event.text

    @property
    def answer(self) -> Answer:
        return self.builder.answer()
