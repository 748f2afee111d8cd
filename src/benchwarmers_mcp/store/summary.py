"""Counts across the whole store, for the status summary (``GET /api/status``, ``bench status``)."""

from __future__ import annotations

from benchwarmers_mcp.store.db import Database
from benchwarmers_mcp.store.verdicts import owed

COUNTS = {
    "endpoints": "SELECT COUNT(*) FROM endpoints",
    "models": "SELECT COUNT(*) FROM models WHERE retired_at IS NULL AND ad_hoc = 0",
    "ad_hoc": "SELECT COUNT(*) FROM models WHERE retired_at IS NULL AND ad_hoc = 1",
    "retired": "SELECT COUNT(*) FROM models WHERE retired_at IS NOT NULL",
    "collections": "SELECT COUNT(*) FROM collections",
    "panels": "SELECT COUNT(*) FROM panels",
    "calls": "SELECT COUNT(*) FROM seats",
    "verdicts": "SELECT COUNT(DISTINCT call) FROM verdicts",
    "owed": f"SELECT COUNT(*) FROM seats s WHERE {owed()}",
}
COUNTS_SQL = "SELECT " + ", ".join(f"({sql}) AS {name}" for name, sql in COUNTS.items())


async def counts(db: Database) -> dict[str, int]:
    """Every count in one query (one read, one consistent snapshot), not one round trip each:
    endpoints; active, ad hoc and retired models; collections; panels; calls (seats, mergers
    included); verdicts (calls judged); owed (seats owed a verdict: ``verdicts.owed``)."""
    row = await db.fetchone(COUNTS_SQL)
    if row is None:
        raise RuntimeError("a query of counts returned no row")
    return {name: int(row[name]) for name in COUNTS}
