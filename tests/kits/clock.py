"""A wall clock a test moves: the app's ``Clock`` (``benchwarmers_mcp.clock``) for code that takes
one (``ModelCaller(clock=...)``, ``Context(clock=...)``), so that a wait of minutes passes at once
and no check depends on how fast the machine ran."""

from __future__ import annotations

import time
from dataclasses import dataclass, field

import anyio.lowlevel


@dataclass
class MovedClock:
    """The system's wall clock, moved on by every sleep on it (recorded in ``slept``, passed at once)."""

    offset: float = 0.0
    slept: list[float] = field(default_factory=list)
    tz: None = None

    def now(self) -> float:
        return time.time() + self.offset

    async def sleep(self, seconds: float) -> None:
        self.slept.append(seconds)
        self.offset += seconds
        await anyio.lowlevel.checkpoint()
