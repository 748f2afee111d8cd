"""Wall-clock time for the app, injectable: the system's, or one a test moves by hand.

A ``Clock`` gives the time (epoch seconds) and sleeps; ``tz`` is the zone the scheduler's slots
and the retire rules' "distinct days" are read in (``None``: the machine's own). The app's clock is
``Context.clock`` (``create_app(settings, clock=...)`` is the seam). Durations of calls are still
measured with ``time.monotonic`` whatever the clock.

The ground floor: this module imports nothing of the package.
"""

from __future__ import annotations

import time
from datetime import date, datetime, tzinfo
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


__all__ = ["Clock", "SystemClock", "day_of", "local"]
