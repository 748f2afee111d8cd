"""Housekeeping: the retention applied (``store.retention.prune``) when the app starts and every
``EVERY`` seconds after, on the app's clock. Not a scheduler job: it spends no upstream call and
needs no lease (a pruned row is left alone, so every replica may run it)."""

from __future__ import annotations

import logging
from typing import Any

from benchwarmers_mcp.context import Context
from benchwarmers_mcp.store import retention

log = logging.getLogger("benchwarmers.housekeeping")

EVERY = 4 * 3600.0


class Housekeeping:
    def __init__(self, ctx: Context, every: float = EVERY) -> None:
        self.ctx, self.every = ctx, every

    async def once(self) -> dict[str, Any]:
        """Prune what the retention no longer keeps, as of the clock's now."""
        pruned = await retention.prune(self.ctx.db, now=self.ctx.clock.now())
        if pruned["panels"] or pruned["route_turns"] or pruned["shadow_calls"]:
            log.info("retention (%d days): pruned the texts of %d panels, %d route turns, %d shadow answers",
                     pruned["days"], pruned["panels"], pruned["route_turns"], pruned["shadow_calls"])
        return pruned

    async def run_forever(self) -> None:
        while True:
            try:
                await self.once()
            except Exception:  # a failed round is logged; the next one tries again
                log.exception("housekeeping failed")
            await self.ctx.clock.sleep(self.every)
