"""Plain-text tables and the small formatting the CLI's listings share; times through ``clock.py``'s
helpers, the ones the dashboard uses."""

from __future__ import annotations

import sys
from collections.abc import Sequence
from typing import Any, TextIO

from benchwarmers_mcp import clock

MAX_CELL = 60


def cell(value: Any) -> str:
    if value is None or value == "":
        return "-"
    if isinstance(value, bool):
        return "yes" if value else "no"
    if isinstance(value, float):
        return f"{value:.1f}"
    text = " ".join(str(value).split())
    return text if len(text) <= MAX_CELL else text[:MAX_CELL - 1] + "…"


def table(headers: Sequence[str], rows: Sequence[Sequence[Any]], stream: TextIO | None = None) -> None:
    """Left-aligned columns, two spaces apart, a header line; nothing at all for no rows."""
    out = stream or sys.stdout
    if not rows:
        return
    texts = [[cell(v) for v in row] for row in rows]
    widths = [max(len(h), *(len(r[i]) for r in texts)) for i, h in enumerate(headers)]
    lines = ["  ".join(h.ljust(w) for h, w in zip(headers, widths, strict=True)).rstrip()]
    lines += ["  ".join(v.ljust(w) for v, w in zip(r, widths, strict=True)).rstrip() for r in texts]
    out.write("\n".join(lines) + "\n")
    out.flush()


def ago(value: Any, now: float | None = None) -> str:
    """A time given as epoch seconds or ISO text, relative to now (``clock.ago``: ``3 min ago``,
    ``in 5 min``); ``never`` for no time."""
    return clock.ago(clock.moment_of(value), now)


def when(value: Any, now: float | None = None) -> str:
    """A time given as epoch seconds or ISO text, in the one date format and how far off:
    ``2026-03-04 14:05 UTC (in 5 min)``, ``... (3 min ago)``; ``-`` for no time."""
    stamp = clock.moment_of(value)
    if stamp is None:
        return "-" if value in (None, "") else str(value)
    return f"{clock.when(stamp)} ({clock.ago(stamp, now)})"


def yes_no_unknown(value: bool | None) -> str:
    return "unknown" if value is None else ("yes" if value else "no")
