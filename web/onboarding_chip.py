"""The onboarding chip in every page's header: the queue's progress (done of all, the item at work
and its step) with Details (each item's steps and log), Stop and Clear, over the admin routes
``POST /api/onboarding/stop`` and ``/clear``. Shown while the queue holds an item not cleared."""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

from benchwarmers_mcp.health import onboarding
from benchwarmers_mcp.store import onboarding as queue
from benchwarmers_mcp.web.registry import View

LIVE = frozenset({"onboarding"})


@dataclass(frozen=True)
class Chip:
    items: list[dict[str, Any]] = field(default_factory=list)
    finished: int = 0
    waiting: int = 0
    running: dict[str, Any] | None = None
    problems: int = 0  # finished without being brought on (no answer, failed)

    @property
    def shown(self) -> bool:
        return bool(self.items)

    @property
    def total(self) -> int:
        return len(self.items)


async def load(view: View) -> Chip:
    items = [onboarding.describe(i) for i in await queue.items(view.ctx.db)]
    finished = [i for i in items if i["state"] in queue.FINISHED]
    return Chip(items, len(finished), sum(1 for i in items if i["state"] in ("queued", "running")),
                next((i for i in items if i["state"] == "running"), None),
                sum(1 for i in finished if i["state"] in ("no answer", "failed")))
