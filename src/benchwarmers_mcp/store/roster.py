"""The reads behind a model's status (``engine/roster.py`` decides it; this module only reads).

``signs`` is one statement: what can mark a model now, each row a sign about one alias:

    gone      a call's error said the model is not there (``model_states.pending_retire_at``,
              cleared by its next answer)
    retiring  an open ``retiring`` alert (a retire rule retires it unless it answers)
    failed    its latest health check (a life probe that was sent) failed, and no call of it has
              answered since (the ledger holds every call, probes too)
    rest      it rests after a rate limit or failures, or its connection is paused, until ``at``

``last_answers`` (``store/health.py``) says when each model last answered, from any source.
"""

from __future__ import annotations

from dataclasses import dataclass

from benchwarmers_mcp.store.db import Database
from benchwarmers_mcp.store.health import LIFE_KINDS
from benchwarmers_mcp.store.limits import CONNECTION_OF

_MARKS = ", ".join("?" for _ in LIFE_KINDS)
SIGNS_SQL = (
    "SELECT 'gone' AS sign, alias, pending_retire_at AS at, pending_why AS why, '' AS failure FROM model_states"
    " WHERE pending_retire_at IS NOT NULL"
    " UNION ALL SELECT 'retiring', subject, at, detail, '' FROM alerts WHERE kind = 'retiring' AND cleared_at IS NULL"
    " UNION ALL SELECT 'failed', p.alias, p.at, p.detail, p.failure FROM probes p"
    " JOIN (SELECT alias, MAX(id) AS id FROM probes"
    f" WHERE kind IN ({_MARKS}) AND (answered > 0 OR refused < n) GROUP BY alias) latest ON latest.id = p.id"
    " WHERE p.answered = 0 AND NOT EXISTS"
    " (SELECT 1 FROM usage u WHERE u.alias = p.alias AND u.t > p.at AND u.status = 'ok')"
    " UNION ALL SELECT 'rest', alias, rest_until, rest_why, '' FROM model_states WHERE rest_until > ?"
    " UNION ALL SELECT 'rest', m.alias, c.paused_until, c.paused_why, '' FROM connection_states c"
    f" CROSS JOIN endpoints e CROSS JOIN models m WHERE c.paused_until > ? AND {CONNECTION_OF} = c.connection"
    " AND m.endpoint = e.name")


@dataclass(frozen=True)
class Sign:
    sign: str  # gone | retiring | failed | rest
    alias: str
    at: float  # when it was seen (gone, retiring, failed); until when (rest)
    why: str  # the provider's words; a retiring alert's detail (JSON)
    failure: str = ""  # a failed check's failure class (``health/classify.py``)


async def signs(db: Database, now: float) -> list[Sign]:
    """Every sign about every model now, in one read."""
    rows = await db.fetchall(SIGNS_SQL, (*LIFE_KINDS, now, now))
    return [Sign(r[0], r[1], float(r[2] or 0.0), r[3] or "", r[4] or "") for r in rows]


__all__ = ["SIGNS_SQL", "Sign", "signs"]
