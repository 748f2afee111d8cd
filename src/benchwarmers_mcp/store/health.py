"""Health history: probe rows, endpoint listings as snapshotted, each model's probe quirks, and
the evidence the auto-retire rules read (answers from every source, when each model's clock
started). Capabilities a probe sees are facts of the ``learned`` source (``store/facts.py``).

Migration ``health_001_probes``. The decisions live in ``health/``; this module only reads and writes.
"""

from __future__ import annotations

import json
from collections.abc import Iterable
from dataclasses import asdict, dataclass, field
from typing import Any

from benchwarmers_mcp.store import facts
from benchwarmers_mcp.store.db import Database, Row
from benchwarmers_mcp.store.portable import read_text

# the probe kinds whose failures are evidence that a model is gone (capability probes only teach)
LIFE_KINDS = ("availability", "speed", "confirm", "retry", "onboarding")
LISTINGS_KEPT = 30 * 86400.0


@dataclass(frozen=True)
class ProbeRow:
    at: float
    alias: str
    connection: str
    kind: str  # availability, speed, tools, reasoning, confirm, retry, onboarding
    prompt: str  # ready, tiny, large, tools, reasoning
    n: int
    answered: int = 0
    refused: int = 0
    errors: int = 0
    timeouts: int = 0
    failure: str | None = None  # the worst failure class among the runs, None when all answered
    detail: str = ""  # the provider's words, at most 300 characters
    p50_s: float | None = None
    p95_s: float | None = None
    min_s: float | None = None
    max_s: float | None = None
    chars_per_s: float | None = None
    tokens_per_s: float | None = None
    tokens_in: int = 0
    tokens_out: int = 0
    reasoning: int = 0
    learned: dict[str, Any] = field(default_factory=dict)
    id: int | None = None


COLUMNS = tuple(f for f in ProbeRow.__dataclass_fields__ if f != "id")


def _probe(row: Row, dialect: str) -> ProbeRow:
    values = {name: row[name] for name in COLUMNS}
    values["learned"] = json.loads(values["learned"] or "{}")
    values["detail"] = read_text(values["detail"], dialect)  # the provider's words, as it said them
    return ProbeRow(**values, id=row["id"])


async def add_probe(db: Database, row: ProbeRow) -> int:
    values = asdict(row)
    values["learned"] = json.dumps(row.learned)
    values["detail"] = row.detail[:300]
    marks = ", ".join("?" for _ in COLUMNS)
    async with db.transaction() as tx:
        return await tx.insert(f"INSERT INTO probes ({', '.join(COLUMNS)}) VALUES ({marks})",
                               [values[c] for c in COLUMNS])


async def probes(db: Database, *, alias: str | None = None, since: float = 0.0, limit: int = 500) -> list[ProbeRow]:
    """Probe rows, newest first."""
    where = "at >= ?"
    params: list[Any] = [since]
    if alias is not None:
        where += " AND alias = ?"
        params.append(alias)
    rows = await db.fetchall(f"SELECT * FROM probes WHERE {where} ORDER BY at DESC, id DESC LIMIT ?",
                             (*params, limit))
    return [_probe(r, db.dialect) for r in rows]


async def latest_probes(db: Database) -> dict[tuple[str, str], ProbeRow]:
    """The newest row per (alias, prompt)."""
    rows = await db.fetchall(
        "SELECT p.* FROM probes p JOIN (SELECT alias, prompt, MAX(id) AS id FROM probes GROUP BY alias, prompt) l"
        " ON l.id = p.id")
    return {(r["alias"], r["prompt"]): _probe(r, db.dialect) for r in rows}


async def life_outcomes(db: Database, since: float) -> dict[str, list[ProbeRow]]:
    """Per alias, the probes that prove life or its absence since ``since``, oldest first."""
    marks = ", ".join("?" for _ in LIFE_KINDS)
    rows = await db.fetchall(f"SELECT * FROM probes WHERE at >= ? AND kind IN ({marks}) ORDER BY at, id",
                             (since, *LIFE_KINDS))
    out: dict[str, list[ProbeRow]] = {}
    for r in rows:
        out.setdefault(r["alias"], []).append(_probe(r, db.dialect))
    return out


ANSWER_SOURCES = (
    "SELECT alias, MAX(at) FROM probes WHERE answered > 0 GROUP BY alias",
    "SELECT alias, MAX(t) FROM usage WHERE status = 'ok' GROUP BY alias",
    "SELECT s.alias, MAX(s.at) FROM seats s JOIN verdicts v ON v.call = s.call WHERE v.useful = 1 GROUP BY s.alias",
    "SELECT alias, MAX(at) FROM route_turns WHERE status = 'ok' AND alias IS NOT NULL GROUP BY alias",
)


async def last_answers(db: Database) -> dict[str, float]:
    """When each model last answered, from any source: a probe, any call in the ledger (panel seat,
    route turn, suite answer), a useful verdict, a route turn."""
    found: dict[str, float] = {}
    for sql in ANSWER_SOURCES:
        for alias, moment in await db.fetchall(sql):
            if moment is not None and moment > found.get(alias, 0.0):
                found[alias] = float(moment)
    return found


async def clock_starts(db: Database) -> dict[str, float]:
    """When each model's evidence starts counting: its registration, or its latest restore."""
    rows = await db.fetchall(
        "SELECT m.alias, m.created_at, (SELECT MAX(r.restored_at) FROM retirements r WHERE r.alias = m.alias)"
        " FROM models m")
    return {r[0]: max(float(r[1]), float(r[2] or 0.0)) for r in rows}


# -- listings --

@dataclass(frozen=True)
class Listing:
    endpoint: str
    at: float
    ok: bool
    served: tuple[str, ...] = ()
    error: str = ""


async def save_listing(db: Database, listing: Listing) -> None:
    async with db.transaction() as tx:
        await tx.execute("INSERT INTO listings (endpoint, at, ok, served, error) VALUES (?, ?, ?, ?, ?)",
                         (listing.endpoint, listing.at, int(listing.ok), json.dumps(list(listing.served)),
                          listing.error[:300]))
        await tx.execute("DELETE FROM listings WHERE endpoint = ? AND at < ?",
                         (listing.endpoint, listing.at - LISTINGS_KEPT))


async def listings(db: Database, endpoint: str, since: float = 0.0) -> list[Listing]:
    """An endpoint's snapshots since ``since``, oldest first."""
    rows = await db.fetchall("SELECT * FROM listings WHERE endpoint = ? AND at >= ? ORDER BY at, id",
                             (endpoint, since))
    return [Listing(r["endpoint"], r["at"], bool(r["ok"]), tuple(json.loads(r["served"])), read_text(r["error"], db.dialect))
            for r in rows]


# -- what probes found about calling a model (its request quirks) and the capabilities they saw --

async def quirks(db: Database, alias: str) -> dict[str, Any]:
    """The parameters ``alias``'s API refused to a probe before (``health.probes.Quirks``)."""
    raw = await db.fetchval("SELECT quirks FROM probe_quirks WHERE alias = ?", (alias,))
    value = json.loads(raw) if raw else {}
    return value if isinstance(value, dict) else {}


async def save_quirks(db: Database, alias: str, value: dict[str, Any], at: float) -> None:
    await db.write("INSERT INTO probe_quirks (alias, quirks, at) VALUES (?, ?, ?) ON CONFLICT (alias)"
                   " DO UPDATE SET quirks = excluded.quirks, at = excluded.at", (alias, json.dumps(value), at))


async def learn_capabilities(db: Database, alias: str, taught: Iterable[tuple[str, Any, str]]) -> None:
    """Capabilities a probe saw (fact, value, evidence) as *learned* facts (``store/facts.py``: the
    user's say still wins), and the model row's effective facts after them, in one transaction."""
    taught = list(taught)
    if not taught:
        return
    async with db.transaction() as tx:
        for fact, value, evidence in taught:
            await facts.learn(tx, alias, fact, value, evidence)
        await facts.recompute(tx, alias)


async def known_facts(db: Database, aliases: Iterable[str] | None = None) -> dict[str, dict[str, Any]]:
    """alias -> {fact: effective value} from every source (what a probe needs to know: does it reason,
    are its tools known)."""
    rows = await facts.rows_for(db, None if aliases is None else list(aliases))
    return {alias: {name: k.winner.value for name, k in facts.effective(found).items()} for alias, found in rows.items()}


async def learned_facts(db: Database, aliases: Iterable[str] | None = None) -> dict[str, dict[str, Any]]:
    """alias -> {fact: value} of the *learned* source alone (from probes and the model's own errors)."""
    rows = await facts.rows_for(db, None if aliases is None else list(aliases))
    return {alias: {r.fact: r.value for r in found if r.source == "learned"} for alias, found in rows.items()}
