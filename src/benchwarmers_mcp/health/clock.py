"""Time for the health jobs and the scheduler, injectable: the system's, or a test's.

A ``Clock`` gives the wall-clock time (epoch seconds) and sleeps; ``tz`` is the time zone the
scheduler's slots and the retire rules' "distinct days" are read in (``None``: the machine's own).
Durations of calls are measured with ``time.monotonic`` whatever the clock.
"""

from __future__ import annotations

import time
from datetime import date, datetime, tzinfo
from typing import Any, Protocol

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


def clock_of(ctx: Any) -> Clock:
    """The clock the app was started with (``create_app(settings, clock=...)``), else the system's."""
    found = getattr(ctx, "extras", {}).get("clock")
    return found if found is not None else SystemClock()
