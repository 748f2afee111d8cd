"""Wall-clock time for the app, injectable: the system's, or one a test moves by hand; and the one
set of date helpers every face writes times with (``iso``, ``when``, ``ago``, ``span``).

A ``Clock`` gives the time (epoch seconds) and sleeps; ``tz`` is the zone the scheduler's slots
and the retire rules' "distinct days" are read in (``None``: the machine's own). The app's clock is
``Context.clock`` (``create_app(settings, clock=...)`` is the seam). Durations of calls are still
measured with ``time.monotonic`` whatever the clock.

Times shown to people: ``when`` is the one date format (``2026-03-04 14:05 UTC``), ``ago`` the one
relative time, past or future alike (``3 min ago``, ``in 2 h 5 min``), ``iso`` the one machine form
(``2026-03-04T14:05:00+00:00``: API bodies, ``<time datetime>``). The dashboard's filters
(``web/render.py``), the admin API and the CLI all call these.

The ground floor: this module imports nothing of the package.
"""

from __future__ import annotations

import time
from datetime import UTC, date, datetime, tzinfo
from typing import Protocol

import anyio


class Clock(Protocol):
    tz: tzinfo | None

    def now(self) -> float: ...

    async def sleep(self, seconds: float) -> None: ...


class SystemClock:
    def __init__(self, tz: tzinfo | None = None) -> None:
        self.tz = tz

    def now(self) -> float:
        return time.time()

    async def sleep(self, seconds: float) -> None:
        await anyio.sleep(seconds)


def local(clock: Clock, moment: float) -> datetime:
    """``moment`` as an aware datetime in the clock's time zone (the machine's when it has none)."""
    return datetime.fromtimestamp(moment, clock.tz).astimezone(clock.tz)


def day_of(clock: Clock, moment: float) -> date:
    return local(clock, moment).date()


def iso(moment: float | None) -> str | None:
    """``moment`` (epoch seconds) as ISO 8601 in UTC to the second; None for no time."""
    return None if moment is None else datetime.fromtimestamp(moment, UTC).isoformat(timespec="seconds")


def moment_of(value: object) -> float | None:
    """Epoch seconds from epoch seconds or ISO text (a trailing ``Z`` too); None for nothing or junk."""
    if value is None or value == "" or isinstance(value, bool):
        return None
    if isinstance(value, (int, float)):
        return float(value)
    try:
        found = datetime.fromisoformat(str(value).replace("Z", "+00:00"))
    except ValueError:
        return None
    return (found if found.tzinfo else found.replace(tzinfo=UTC)).timestamp()


def when(moment: float | None, never: str = "never") -> str:
    """The one date format people read: ``2026-03-04 14:05 UTC``."""
    if moment is None:
        return never
    return datetime.fromtimestamp(moment, UTC).strftime("%Y-%m-%d %H:%M UTC")


def day(moment: float | None) -> str:
    """The date alone, as ``when`` writes it: ``2026-03-04``."""
    return "" if moment is None else datetime.fromtimestamp(moment, UTC).strftime("%Y-%m-%d")


def span(seconds: float) -> str:
    """A length of time in words: ``40 s``, ``3 min``, ``2 h 5 min``, ``4 d``."""
    whole = max(0, int(seconds))
    if whole >= 86400:
        return f"{whole // 86400} d"
    if whole >= 3600:
        minutes = whole % 3600 // 60
        return f"{whole // 3600} h" + (f" {minutes} min" if minutes else "")
    if whole >= 60:
        return f"{whole // 60} min"
    return f"{whole} s"


def ago(moment: float | None, now: float | None = None, never: str = "never") -> str:
    """How far ``moment`` is from ``now``, past or future: ``3 min ago``, ``in 5 min``, ``just now``."""
    if moment is None:
        return never
    seconds = (time.time() if now is None else now) - moment
    if abs(seconds) < 1:
        return "just now"
    return f"{span(seconds)} ago" if seconds > 0 else f"in {span(-seconds)}"


__all__ = ["Clock", "SystemClock", "ago", "day", "day_of", "iso", "local", "moment_of", "span", "when"]
