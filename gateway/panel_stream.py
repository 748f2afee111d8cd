"""A panel as a stream of text pieces, the same for every dialect: the heading, each seat's
section the moment it finishes, the footer (or, merged, the one merged piece), with ``None``
whenever the keep-alive interval passes idle. Dialects only frame the pieces."""

from __future__ import annotations

import logging
from collections.abc import AsyncIterator, Callable

from benchwarmers_mcp.engine.panel import MergeDone, PanelRun, SeatDone
from benchwarmers_mcp.errors import BenchError
from benchwarmers_mcp.gateway import panel_view
from benchwarmers_mcp.gateway.sse import KEEPALIVE_COMMENT

log = logging.getLogger("benchwarmers.gateway")


async def pieces(run: PanelRun, keepalive: float | None) -> AsyncIterator[str | None]:
    merged = run.reply == "merged"
    if not merged:
        yield panel_view.heading(run)
    async for event in run.events(keepalive):
        if event is None:
            yield None
        elif isinstance(event, SeatDone) and not merged:
            yield panel_view.section(run, event.record)
        elif isinstance(event, MergeDone):
            yield panel_view.merged_content(run)
    if not merged:
        yield panel_view.footer(run)


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
