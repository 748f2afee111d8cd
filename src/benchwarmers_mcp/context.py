"""What the faces hand the engine: settings, the store, the model caller and the background
task group in which panels run (so a caller that hangs up never stops a panel)."""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

import httpx
from anyio.abc import TaskGroup

from benchwarmers_mcp.settings import Settings
from benchwarmers_mcp.store import Database
from benchwarmers_mcp.upstream.caller import ModelCaller
from benchwarmers_mcp.upstream.keys import KeyStore


@dataclass
class Context:
    settings: Settings
    db: Database
    keys: KeyStore
    client: httpx.AsyncClient
    caller: ModelCaller
    tg: TaskGroup
    extras: dict[str, Any] = field(default_factory=dict)

    async def resting(self) -> frozenset[str]:
        """Aliases resting after a rate limit (filled in by limits.py when present)."""
        hook = self.extras.get("resting")
        return frozenset(await hook()) if hook else frozenset()
