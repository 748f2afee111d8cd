"""Token counts the dialects report: what members said they used when every seat reported real
usage, else the gateway's estimate (characters / 4 plus 10%, an image 2,500). No model is
ever called to count."""

from __future__ import annotations

from starlette.requests import Request

from benchwarmers_mcp.engine.panel import PanelRun
from benchwarmers_mcp.gateway.dispatch import resolve_for
from benchwarmers_mcp.messages import Ask, Usage, estimate_text_tokens, estimate_tokens


def panel_usage(run: PanelRun, ask: Ask, answer_text: str) -> Usage:
    """The panel's token counts: the members' own when real, else the estimate."""
    real = run.usage
    if real.total and not real.estimated:
        return real
    return Usage(estimate_tokens(ask), estimate_text_tokens(answer_text), estimated=True)


def count(ask: Ask) -> int:
    """The count routes' answer: the prompt, tool definitions and tool traffic included."""
    return estimate_tokens(ask, count_tools=True)


async def counted(request: Request, ask: Ask) -> int:
    """A count route's answer for a collection the caller may use (404 when unknown, 403 out of scope)."""
    await resolve_for(request, ask.collection)
    return count(ask)
