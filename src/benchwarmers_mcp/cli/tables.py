"""Plain-text tables and the small formatting the CLI's listings share."""

from __future__ import annotations

import sys
import time
from collections.abc import Sequence
from datetime import datetime
from typing import Any, TextIO

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


def span(seconds: float) -> str:
    """A length of time in its largest whole unit: ``2d``, ``3h``, ``5m``, ``40s``."""
    for size, unit in ((86400, "d"), (3600, "h"), (60, "m")):
        if seconds >= size:
            return f"{int(seconds // size)}{unit}"
    return f"{int(seconds)}s"


def ago(stamp: float | None, now: float | None = None) -> str:
    """``3m ago``, ``2d ago``; ``never`` for no time."""
    if not stamp:
        return "never"
    return f"{span(max(0.0, (now or time.time()) - stamp))} ago"


def when(value: Any, now: float | None = None) -> str:
    """A reset time given as epoch seconds or ISO text, as local time and how far off."""
    if value in (None, ""):
        return "-"
    if isinstance(value, (int, float)):
        stamp = float(value)
    else:
        try:
            stamp = datetime.fromisoformat(str(value).replace("Z", "+00:00")).timestamp()
        except ValueError:
            return str(value)
    left = stamp - (now or time.time())
    local = datetime.fromtimestamp(stamp).strftime("%Y-%m-%d %H:%M")
    return f"{local} (passed)" if left <= 0 else f"{local} (in {span(left)})"


def yes_no_unknown(value: bool | None) -> str:
    return "unknown" if value is None else ("yes" if value else "no")
