"""Figures for the dashboard's charts and roster, and ``GET /api/stats/*``.

Days are UTC days (from a multiple of 86,400 s to the next), counted from the ledger's ``t``; the
verdict figures use the latest verdict on each call, on panel seats and route calls alike. Every
subquery in a FROM has a name (PostgreSQL before 16 wants one).
"""

from __future__ import annotations

from typing import Any

from benchwarmers_mcp.store import summary
from benchwarmers_mcp.store.db import Database

DAY = 86_400

# the status summary's counts (``summary.COUNTS``) and what the dashboard shows beside them
COUNTS = {
    **summary.COUNTS,
    "conversations": "SELECT COUNT(*) FROM route_conversations",
    "alerts": "SELECT COUNT(*) FROM alerts WHERE cleared_at IS NULL",
    "gateway_keys": "SELECT COUNT(*) FROM gateway_keys",
}
COUNTS_SQL = "SELECT " + ", ".join(f"({sql}) AS {name}" for name, sql in COUNTS.items())


async def counts(db: Database) -> dict[str, int]:
    """Every count in one statement (one read, one consistent snapshot), and ``on_bench``: the
    models that may be seated (registered or ad hoc, not retired)."""
    row = await db.fetchone(COUNTS_SQL)
    if row is None:
        raise RuntimeError("a query of counts returned no row")
    out = {name: int(row[name]) for name in COUNTS}
    out["on_bench"] = out["models"] + out["ad_hoc"]
    return out


def _days_sql(first: int, days: int) -> tuple[str, list[float]]:
    """One grouped read per UTC day, in one statement: each day's bounds are parameters and its
    number a literal from ``range``, so the SQL is the same on every backend (no date function and
    no rounding of a float to a day, which SQLite and PostgreSQL do differently)."""
    parts, params = [], []
    for n in range(days):
        parts.append(f"SELECT {n} AS n, connection, COUNT(*) AS requests, SUM(tokens_in) AS tokens_in,"
                     " SUM(tokens_out) AS tokens_out, SUM(tokens_unknown) AS tokens_unknown"
                     " FROM usage WHERE t >= ? AND t < ? GROUP BY connection")
        params += [float((first + n) * DAY), float((first + n + 1) * DAY)]
    return " UNION ALL ".join(parts), params


async def usage_by_day(db: Database, now: float, days: int = 30) -> dict[str, Any]:
    """Requests and tokens per connection per UTC day for the last ``days`` days (today included), and
    ``tokens_unknown``: how many of those requests are interrupted calls, their tokens estimated
    (``store/ledger.py``)."""
    first = int(now // DAY) - days + 1
    sql, params = _days_sql(first, days)
    rows = await db.fetchall(sql, params)
    connections = sorted({r["connection"] for r in rows})
    table = {(r["n"], r["connection"]): r for r in rows}
    out_days = []
    for n in range(days):
        cells = {}
        for c in connections:
            r = table.get((n, c))
            cells[c] = {"requests": r["requests"] if r else 0,
                        "tokens": (r["tokens_in"] or 0) + (r["tokens_out"] or 0) if r else 0,
                        "tokens_unknown": int(r["tokens_unknown"] or 0) if r else 0}
        out_days.append({"day": (first + n) * DAY, "connections": cells})
    return {"connections": connections, "days": out_days}


async def helped(db: Database) -> dict[str, dict[str, int]]:
    """Per alias: useful and judged, from the latest verdict on each of its calls (panels and routes)."""
    rows = await db.fetchall(
        "SELECT c.alias, SUM(v.useful) AS useful, COUNT(*) AS judged FROM verdicts v"
        " JOIN (SELECT call, MAX(id) AS id FROM verdicts GROUP BY call) last ON last.id = v.id"
        " JOIN (SELECT call, alias FROM seats UNION ALL SELECT call, alias FROM route_calls) c ON c.call = v.call"
        " GROUP BY c.alias")
    return {r["alias"]: {"useful": int(r["useful"] or 0), "judged": int(r["judged"])} for r in rows}


async def last_answers(db: Database) -> dict[str, float]:
    """Per alias: when it last answered (a panel seat or a route turn that came back ok)."""
    rows = await db.fetchall(
        "SELECT alias, MAX(at) FROM (SELECT alias, at FROM seats WHERE status = 'ok'"
        " UNION ALL SELECT alias, at FROM route_turns WHERE status = 'ok' AND alias IS NOT NULL) AS answered"
        " GROUP BY alias")
    return {r[0]: r[1] for r in rows}


async def answers(db: Database) -> dict[str, int]:
    """Per alias: how many calls it has answered on panels and route turns (any outcome)."""
    rows = await db.fetchall(
        "SELECT alias, COUNT(*) FROM (SELECT alias FROM seats"
        " UNION ALL SELECT alias FROM route_turns WHERE alias IS NOT NULL) AS answered GROUP BY alias")
    return {r[0]: r[1] for r in rows}


async def last_status(db: Database) -> dict[str, str]:
    """Per alias: how its latest call ended (a panel seat or a route turn): ok, empty, error, timeout..."""
    rows = await db.fetchall(
        "SELECT alias, status FROM (SELECT alias, status, ROW_NUMBER() OVER (PARTITION BY alias ORDER BY at DESC) AS n"
        " FROM (SELECT alias, status, at FROM seats UNION ALL"
        " SELECT alias, status, at FROM route_turns WHERE alias IS NOT NULL) AS answered) AS ranked WHERE n = 1")
    return {r[0]: r[1] for r in rows}
