"""Whether this server's store serves now, for ``GET /health``. A load balancer asks often, so
while all is well it costs one ``SELECT 1`` (bounded by ``ANSWER_WITHIN``: an unreachable
server must not hold the check open), and it writes only after the store itself failed
(``Database.failure``: a dropped connection, a full disk, an I/O error, a refused write: what
each backend's error boundary maps to ``StoreUnavailable``). Then every check probes with a write
until one goes through, and the failure is forgotten (``Database.recovered``): no restart needed.

The probe writes what a seat's answer would: a row of ``PROBE_CHARACTERS`` random characters
(more than a page, so a disk or a page budget that is full refuses it) into ``replicas``, under a
name no replica has, and deletes it in the same transaction: no reader ever sees it, and the pages
it took are free for the next probe.
"""

from __future__ import annotations

import secrets

import anyio

from benchwarmers_mcp.store.db import Database, StoreUnavailable

ANSWER_WITHIN = 3.0  # seconds (the image's HEALTHCHECK gives up after 4)
PROBE_CHARACTERS = 6000


async def problem(db: Database, replica: str) -> str | None:
    """Why the store cannot serve now, in one line, or None when it can."""
    try:
        with anyio.fail_after(ANSWER_WITHIN):
            await db.fetchval("SELECT 1")
            if db.failure() is None:
                return None
            await _probe(db, f"{replica}:probe")
    except TimeoutError:
        return f"the store did not answer within {ANSWER_WITHIN:g} s"
    except StoreUnavailable as e:
        return e.message
    except RuntimeError:  # the backend's own "not open"
        return "the store is closed"
    db.recovered()
    return None


async def _probe(db: Database, name: str) -> None:
    async with db.transaction() as tx:
        await tx.execute("INSERT INTO replicas (id, host, pid, started, seen) VALUES (?, ?, 0, 0, 0)",
                         (name, secrets.token_urlsafe(PROBE_CHARACTERS)[:PROBE_CHARACTERS]))
        await tx.execute("DELETE FROM replicas WHERE id = ?", (name,))
