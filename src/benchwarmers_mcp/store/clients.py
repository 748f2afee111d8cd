"""Which client calls upstreams: ``builtin`` (the bench's own: pacing from the upstream's own rate
headers, the shared outbound client) or ``llm`` (the llm CLI's Python API and plugins,
``providers/llm_client.py``). The choice on Settings is a row of the ``settings`` table; without
one, ``BENCH_CLIENT`` (``Settings.client``) decides.

``api_for`` is read on every upstream call right after its gate (``limits.gate``), which has just
read the configuration's stamp: while the choice is kept under that stamp it costs no statement,
and it is read again (one statement) only after a configuration change."""

from __future__ import annotations

from benchwarmers_mcp.errors import BadRequest
from benchwarmers_mcp.store import config_version
from benchwarmers_mcp.store.changes import log_change
from benchwarmers_mcp.store.db import Database, Reader

CLIENTS = ("builtin", "llm")
SETTING = "client"
KEY = ("clients.chosen",)
# the APIs the llm client takes over (the simulated models are the bench's own, whoever calls)
LLM_APIS = ("chat", "responses", "anthropic", "gemini", "ollama")


async def _read(db: Reader) -> str | None:
    value = await db.fetchval("SELECT value FROM settings WHERE name = ?", (SETTING,))
    return None if value is None else str(value)


async def chosen(db: Database) -> str | None:
    """The client chosen on Settings, or None (the environment's default applies)."""
    return await config_version.cached(db, KEY, _read)


async def api_for(db: Database, api: str, default: str) -> str:
    """The provider a call to an endpoint of ``api`` goes through: the endpoint's own API with the
    built-in client, ``llm`` with the llm client. Right after a call's gate, a kept choice is free."""
    seen = config_version.peek(db, KEY)
    client = seen[1] if seen is not None else await chosen(db)
    return "llm" if (client or default) == "llm" and api in LLM_APIS else api


async def choose(db: Database, client: str | None) -> None:
    """Choose the client (None: back to the environment's default)."""
    if client is not None and client not in CLIENTS:
        raise BadRequest(f"client must be one of {', '.join(CLIENTS)}")
    async with db.transaction() as tx:
        if client is None:
            await tx.execute("DELETE FROM settings WHERE name = ?", (SETTING,))
        else:
            await tx.execute("INSERT INTO settings (name, value) VALUES (?, ?) ON CONFLICT (name) DO UPDATE"
                             " SET value = excluded.value", (SETTING, client))
        await log_change(tx, "settings.client", SETTING, {"client": client})


__all__ = ["CLIENTS", "LLM_APIS", "api_for", "choose", "chosen"]
