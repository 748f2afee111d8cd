"""What every dialect's route responder shares: starting the turn from the HTTP request, the
headers it carries, and the tool calls of a turn gathered whole (for the dialects that emit each
tool call in one piece)."""

from __future__ import annotations

import json
from typing import Any

from starlette.requests import Request

from benchwarmers_mcp import route
from benchwarmers_mcp.context import Context
from benchwarmers_mcp.messages import Ask, ToolCall
from benchwarmers_mcp.route import RouteTurn
from benchwarmers_mcp.store.collections import Collection

SESSION_HEADER = "x-claude-code-session-id"


async def begin(ctx: Context, ask: Ask, collection: Collection, request: Request) -> RouteTurn:
    """Start the turn and wait for a member to commit: a whole turn waits for the whole answer, a
    streamed one at most ``stream_wait`` seconds (then the 200 goes and keep-alives follow)."""
    turn = await route.start_turn(ctx, ask, collection, session=request.headers.get(SESSION_HEADER),
                                  hold_all=not ask.stream)
    await turn.ready(route.tuning(ctx).stream_wait if ask.stream else None)
    return turn


def headers(turn: RouteTurn) -> dict[str, str]:
    out = {"X-Bench-Conversation": turn.conversation}
    if turn.alias:
        out["X-Bench-Model"] = turn.alias
    return out


def arguments_object(call: ToolCall) -> dict[str, Any]:
    """A tool call's arguments as an object (Anthropic, Gemini and Ollama want one, not JSON text)."""
    try:
        value = json.loads(call.arguments or "{}")
    except ValueError:
        return {"input": call.arguments}
    return value if isinstance(value, dict) else {"input": value}
