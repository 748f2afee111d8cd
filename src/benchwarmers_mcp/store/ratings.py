"""Learning in the store: the evidence ratings are made of, the suggestions a review raised (and
what became of each), the learning settings, and shadow answers.

    evidence()         every source kept apart, counted per model, scope and age bucket (the age in
                       whole buckets, ``portable.floor_of``; no date functions), each verdict with
                       the collections of the scoped key that sent it (``verdicts.scope``: None for
                       an unscoped one, or for every one when the learning settings say
                       ``scoped_verdicts: everywhere``); health from
                       ``health_tally`` (a row per model and day that triggers keep as calls land),
                       two rows a model at their equivalent ages (``store/health_evidence.py``)
    suggestions        one row per suggestion; ``open_key`` is set while it is open, so a review that
                       raises the same suggestion again refreshes it instead of adding a row
    accept()           applies a suggestion to the collection's members, marks it accepted and logs
                       the change with its reason, in one transaction; never below one member
    shadow_calls       a member's answer to a route turn it was not chosen for: never sent to the
                       agent, kept (answer included) for a later verdict under its own call id
"""

from __future__ import annotations

import json
import math
import time
from collections.abc import Awaitable, Callable, Iterable
from dataclasses import dataclass, field, replace
from functools import partial
from typing import Any

from benchwarmers_mcp.errors import BadRequest, NotFound
from benchwarmers_mcp.store import config_version, health_evidence
from benchwarmers_mcp.store.changes import log_change
from benchwarmers_mcp.store.db import Database, Reader, Row, Transaction, placeholders
from benchwarmers_mcp.store.portable import floor_of, read_text

DAY = 86400.0
BUCKET = DAY  # evidence is aged by the day

_LATEST = "JOIN (SELECT call, MAX(id) AS id FROM verdicts GROUP BY call) last ON last.id = v.id"
_VERDICT_COLUMNS = ("v.useful AS useful, CASE WHEN v.false_claims <> '[]' THEN 1 ELSE 0 END AS wrong,"
                    " CASE WHEN v.real <> '[]' THEN 1 ELSE 0 END AS verified, v.scope AS scope")
_VERDICT_SOURCES = {
    "panel": "JOIN seats s ON s.call = v.call JOIN panels p ON p.id = s.panel",
    "route": "JOIN route_calls s ON s.call = v.call",
    "shadow": "JOIN shadow_calls s ON s.call = v.call",
}
_SCOPE = {"panel": "s.alias AS alias, p.collection AS collection, p.shape AS shape",
          "route": "s.alias AS alias, s.collection AS collection, 'route' AS shape",
          "shadow": "s.alias AS alias, s.collection AS collection, 'route' AS shape"}


def _bucket(db: Reader, at: str) -> str:
    """How many ``bucket`` lengths ago ``at`` was (parameters: now, bucket), the same on both backends."""
    return floor_of(f"(? - {at}) / ?", db.dialect) + " AS bucket"


@dataclass(frozen=True)
class EvidenceRow:
    """Like ``engine.ratings.Evidence``; the engine maps it (the store imports nothing above it)."""

    alias: str
    source: str
    collection: str
    shape: str
    good: int
    bad: int
    wrong: int
    real: int
    age: float
    scope: tuple[str, ...] | None = None  # the scoped key's collections (bare names); None: any


async def _verdict_evidence(db: Reader, source: str, now: float, bucket: float) -> tuple[list[EvidenceRow], float]:
    """Every model's verdict evidence from ``source``, and until when it holds: the first moment a
    verdict in it moves to an older bucket (its group's oldest verdict, one bucket on)."""
    rows = await db.fetchall(
        "SELECT alias, collection, shape, useful, wrong, verified, scope, bucket, COUNT(*) AS n, MIN(at) AS first"
        f" FROM (SELECT {_SCOPE[source]}, {_VERDICT_COLUMNS}, v.at AS at, {_bucket(db, 'v.at')} FROM verdicts v"
        f" {_LATEST} {_VERDICT_SOURCES[source]}"
        ") e GROUP BY alias, collection, shape, useful, wrong, verified, scope, bucket", (now, bucket))
    out, until = [], math.inf
    for r in rows:
        n, k = int(r["n"]), int(r["bucket"])
        out.append(EvidenceRow(r["alias"], source, r["collection"], r["shape"], n if r["useful"] else 0,
                               0 if r["useful"] else n, n if r["wrong"] else 0, n if r["verified"] else 0,
                               (k + 0.5) * bucket, None if r["scope"] is None else tuple(json.loads(r["scope"]))))
        until = min(until, float(r["first"]) + (k + 1) * bucket)
    return out, until


@dataclass(frozen=True)
class _Held:
    """Evidence rows as read at ``since``: the same answer for any ``now`` in [since, until) while
    the newest row of their table is still ``last`` (verdicts and suite answers are only added)."""

    last: int
    bucket: float
    since: float
    until: float
    rows: tuple[EvidenceRow, ...]

    def holds(self, last: int, bucket: float, now: float) -> bool:
        return self.last == last and self.bucket == bucket and self.since <= now < self.until


async def _held(db: Reader, key: str, newest: int | None, bucket: float, now: float,
                read: Callable[[], Awaitable[tuple[list[EvidenceRow], float]]]) -> tuple[EvidenceRow, ...]:
    """Every model's rows from ``read``, kept in ``db.memo`` under ``key`` while the newest row of
    their table is still ``newest`` (rows are only ever added; every writer of every process takes
    the store's one writer lock, so ids commit in order) and no age has passed into the next bucket.
    ``newest`` is None inside a transaction: read there every time."""
    if not (isinstance(db, Database) and newest is not None):
        return tuple((await read())[0])
    held = db.memo.get(key)
    if not (isinstance(held, _Held) and held.holds(newest, bucket, now)):
        rows, until = await read()
        held = db.memo[key] = _Held(newest, bucket, now, until, tuple(rows))
    return held.rows


def _among(rows: tuple[EvidenceRow, ...], aliases: tuple[str, ...] | None) -> list[EvidenceRow]:
    wanted = None if aliases is None else set(aliases)
    return [r for r in rows if wanted is None or r.alias in wanted]


async def _as_settled(db: Reader, rows: list[EvidenceRow]) -> list[EvidenceRow]:
    """``rows`` with scoped keys' verdicts counted as the learning settings say: on their keys'
    collections (as they are), or everywhere (their scope dropped). The settings are read only
    when some row has a scope."""
    if all(r.scope is None for r in rows) or (await learning_settings(db)).scoped_verdicts == "own":
        return rows
    return [r if r.scope is None else replace(r, scope=None) for r in rows]


async def _suite_rows(db: Reader, now: float, bucket: float) -> tuple[list[EvidenceRow], float]:
    """Every model's scored suite answers, counted per model, outcome and age bucket, and until
    when that holds (as ``_verdict_evidence``)."""
    rows = await db.fetchall(
        "SELECT alias, good, wrong, bucket, COUNT(*) AS n, MIN(at) AS first FROM ("
        "SELECT alias, at, CASE WHEN outcome IN ('found', 'clean') THEN 1 ELSE 0 END AS good,"
        f" CASE WHEN wrong > 0 OR invented > 0 THEN 1 ELSE 0 END AS wrong, {_bucket(db, 'at')}"
        " FROM suite_answers WHERE scored = 1) e GROUP BY alias, good, wrong, bucket", (now, bucket))
    out, until = [], math.inf
    for r in rows:
        n, k = int(r["n"]), int(r["bucket"])
        out.append(EvidenceRow(r["alias"], "suite", "", "", n if r["good"] else 0, 0 if r["good"] else n,
                               n if r["wrong"] else 0, 0, (k + 0.5) * bucket))
        until = min(until, float(r["first"]) + (k + 1) * bucket)
    return out, until


async def evidence(db: Reader, now: float | None = None, *, half_life: float, bucket: float = BUCKET,
                   sources: tuple[str, ...] = ("panel", "route", "shadow", "suite", "health"),
                   aliases: Iterable[str] | None = None) -> list[EvidenceRow]:
    """Every piece of evidence about ``aliases`` (None: every model), counted per model, source,
    scope and age bucket (the latest verdict on each call counts, once). A verdict a scoped gateway
    key sent carries the key's collections, unless the learning settings count such verdicts
    everywhere (``scoped_verdicts``). Health comes as at most two
    rows a model, aged so that ``half_life`` (seconds, the ratings' own: the store knows no policy)
    weighs them as the model's days weigh (``store/health_evidence.py``)."""
    now = time.time() if now is None else now
    among = None if aliases is None else tuple(dict.fromkeys(aliases))
    newest = await _newest(db, sources)
    out: list[EvidenceRow] = []
    for source in sources:
        # verdicts and suite answers are kept between reads: each explorer panel rates its whole
        # pool, and reading every answer of every model each time grew with the suite's history
        # (6.5 ms a read with 100 answers a model on a 43-model bench, 107 ms with 1,000)
        if source in _VERDICT_SOURCES:
            out += _among(await _held(db, f"ratings.evidence.{source}", newest.get("verdicts"), bucket, now,
                                      partial(_verdict_evidence, db, source, now, bucket)), among)
        elif source == "suite":
            out += _among(await _held(db, "ratings.evidence.suite", newest.get("suite_answers"), bucket, now,
                                      partial(_suite_rows, db, now, bucket)), among)
        elif source == "health":
            out += [EvidenceRow(alias, "health", "", "", good, bad, 0, 0, age)
                    for alias, good, bad, age in await health_evidence.evidence_rows(db, now, half_life, among)]
    return await _as_settled(db, out)


async def _newest(db: Reader, sources: tuple[str, ...]) -> dict[str, int]:
    """The newest row's id of each kept source's table, in one statement (none inside a transaction,
    where nothing is kept)."""
    tables = [table for table, wanted in (("verdicts", any(s in _VERDICT_SOURCES for s in sources)),
                                          ("suite_answers", "suite" in sources)) if wanted]
    if not (isinstance(db, Database) and tables):
        return {}
    row = await db.fetchone("SELECT " + ", ".join(f"(SELECT COALESCE(MAX(id), 0) FROM {t}) AS {t}" for t in tables))
    assert row is not None
    return {t: int(row[t]) for t in tables}


async def tally_many(tx: Transaction, rows: Iterable[tuple[str, int, int, int]]) -> None:
    """Days of health tally, ``(alias, day, ok, failed)``, in one batch: the history a benchmark
    starts from (calls fill the tally through triggers). Each row takes the next ``seq``, as the
    triggers' do, so kept health evidence sees them."""
    await tx.executemany("INSERT INTO health_tally (alias, day, ok, failed, seq)"
                         " VALUES (?, ?, ?, ?, (SELECT COALESCE(MAX(seq), 0) + 1 FROM health_tally))", rows)


async def refused_shares(db: Reader, since: float, *, min_calls: int = 10) -> dict[str, float]:
    """Per alias with at least ``min_calls`` calls in the ledger since ``since``: the share the
    pacing refused (resting after a rate limit, a quota spent, a limit reached)."""
    rows = await db.fetchall(
        "SELECT alias, SUM(CASE WHEN status = 'refused' THEN 1 ELSE 0 END) AS refused, COUNT(*) AS n"
        " FROM usage WHERE t >= ? GROUP BY alias", (since,))
    return {r["alias"]: int(r["refused"] or 0) / int(r["n"]) for r in rows if int(r["n"]) >= min_calls}


# ---- settings ----------------------------------------------------------------------------------

@dataclass(frozen=True)
class LearningSettings:
    auto: bool = False  # apply strong suggestions on their own (off: the user accepts them)
    shadow: tuple[str, ...] = ()  # collections whose route turns get a shadow seat
    explore: str = "ucb"  # how explorers are chosen: ucb (upper bound) or thompson
    scoped_verdicts: str = "own"  # a scoped key's verdicts count on its own collections, or everywhere

    def as_dict(self) -> dict[str, Any]:
        return {"auto": self.auto, "shadow": list(self.shadow), "explore": self.explore,
                "scoped_verdicts": self.scoped_verdicts}


EXPLORE = ("ucb", "thompson")
SCOPED_VERDICTS = ("own", "everywhere")


async def learning_settings(db: Reader) -> LearningSettings:
    """Kept while the configuration is unchanged (``config_version``; read afresh in a transaction)."""
    return await config_version.cached(db, "ratings.learning_settings", _learning_settings)


async def _learning_settings(db: Reader) -> LearningSettings:
    raw = await db.fetchval("SELECT value FROM settings WHERE name = 'learning'")
    if not raw:
        return LearningSettings()
    value = json.loads(raw)
    scoped = value.get("scoped_verdicts")
    return LearningSettings(bool(value.get("auto", False)), tuple(value.get("shadow", ())),
                            value.get("explore", "ucb") if value.get("explore") in EXPLORE else "ucb",
                            scoped if scoped in SCOPED_VERDICTS else "own")


async def save_learning_settings(db: Database, settings: LearningSettings) -> LearningSettings:
    if settings.explore not in EXPLORE:
        raise BadRequest(f"explore is one of {', '.join(EXPLORE)}")
    if settings.scoped_verdicts not in SCOPED_VERDICTS:
        raise BadRequest(f"scoped_verdicts is one of {', '.join(SCOPED_VERDICTS)}")
    async with db.transaction() as tx:
        known = {r[0] for r in await tx.fetchall("SELECT name FROM collections")}
        unknown = [c for c in settings.shadow if c not in known]
        if unknown:
            raise NotFound(f"no collection named {', '.join(repr(c) for c in unknown)}")
        value = json.dumps(settings.as_dict())
        await tx.execute("INSERT INTO settings (name, value) VALUES ('learning', ?)"
                         " ON CONFLICT (name) DO UPDATE SET value = excluded.value", (value,))
        await log_change(tx, "settings.learning", "learning", settings.as_dict())
    return settings


# ---- suggestions -------------------------------------------------------------------------------

@dataclass(frozen=True)
class SuggestionRow:
    id: int
    collection: str
    kind: str
    alias: str
    replaces: str
    reason: str
    strength: float
    auto: bool
    evidence: dict[str, Any]
    state: str
    raised_at: float
    updated_at: float
    decided_at: float | None = None
    decided_by: str | None = None

    def as_dict(self) -> dict[str, Any]:
        return {"id": self.id, "collection": self.collection, "kind": self.kind, "alias": self.alias,
                "replaces": self.replaces or None, "reason": self.reason, "strength": round(self.strength, 3),
                "auto": self.auto, "evidence": self.evidence, "state": self.state, "raised_at": self.raised_at,
                "updated_at": self.updated_at, "decided_at": self.decided_at, "decided_by": self.decided_by}


@dataclass(frozen=True)
class NewSuggestion:
    collection: str
    kind: str
    alias: str
    replaces: str = ""
    reason: str = ""
    strength: float = 0.0
    auto: bool = False
    evidence: dict[str, Any] = field(default_factory=dict)

    @property
    def key(self) -> str:
        return f"{self.collection}|{self.kind}|{self.alias}|{self.replaces}"


def _suggestion(r: Row) -> SuggestionRow:
    return SuggestionRow(int(r["id"]), r["collection"], r["kind"], r["alias"], r["replaces"], r["reason"],
                         float(r["strength"]), bool(r["auto"]), json.loads(r["evidence"]), r["state"], r["raised_at"],
                         r["updated_at"], r["decided_at"], r["decided_by"])


async def sync_open(db: Database, collection: str, raised: list[NewSuggestion], now: float | None = None
                    ) -> list[SuggestionRow]:
    """A review's suggestions for one collection: new ones added, the same ones refreshed, open
    ones it no longer raises withdrawn. Returns the collection's open suggestions."""
    now = time.time() if now is None else now
    keys = [s.key for s in raised]
    async with db.transaction() as tx:
        for s in raised:
            await tx.execute(
                "INSERT INTO suggestions (collection, kind, alias, replaces, reason, strength, auto, evidence, state,"
                " open_key, raised_at, updated_at) VALUES (?, ?, ?, ?, ?, ?, ?, ?, 'open', ?, ?, ?)"
                " ON CONFLICT (open_key) DO UPDATE SET reason = excluded.reason, strength = excluded.strength,"
                " auto = excluded.auto, evidence = excluded.evidence, updated_at = excluded.updated_at",
                (s.collection, s.kind, s.alias, s.replaces, s.reason, s.strength, int(s.auto),
                 json.dumps(s.evidence), s.key, now, now))
        keep = f" AND open_key NOT IN ({placeholders(keys)})" if keys else ""
        await tx.execute("UPDATE suggestions SET state = 'withdrawn', open_key = NULL, decided_at = ?,"
                         f" decided_by = 'review' WHERE collection = ? AND state = 'open'{keep}",
                         (now, collection, *keys))
        rows = await tx.fetchall("SELECT * FROM suggestions WHERE collection = ? AND state = 'open' ORDER BY id",
                                 (collection,))
    return [_suggestion(r) for r in rows]


async def suggestions(db: Reader, *, state: str | None = "open", collection: str | None = None,
                      limit: int = 200) -> list[SuggestionRow]:
    where, params = [], []
    if state:
        where.append("state = ?")
        params.append(state)
    if collection:
        where.append("collection = ?")
        params.append(collection)
    sql = "SELECT * FROM suggestions" + (" WHERE " + " AND ".join(where) if where else "") + " ORDER BY id DESC LIMIT ?"
    return [_suggestion(r) for r in await db.fetchall(sql, (*params, limit))]


async def get_suggestion(db: Reader, suggestion_id: int) -> SuggestionRow:
    row = await db.fetchone("SELECT * FROM suggestions WHERE id = ?", (suggestion_id,))
    if row is None:
        raise NotFound(f"no suggestion with id {suggestion_id}")
    return _suggestion(row)


def _new_members(s: SuggestionRow, members: list[str]) -> list[str]:
    if s.kind == "promote":
        if s.alias in members:
            raise BadRequest(f"{s.alias} is already a member of bench/{s.collection}")
        if s.replaces not in members:
            raise BadRequest(f"{s.replaces} is no longer a member of bench/{s.collection}; the next review "
                             "will suggest again")
        return [s.alias if m == s.replaces else m for m in members]
    if s.alias not in members:
        raise BadRequest(f"{s.alias} is no longer a member of bench/{s.collection}")
    if len(members) <= 1:
        raise BadRequest(f"bench/{s.collection} would have no members left; a collection keeps at least one")
    return [m for m in members if m != s.alias]


async def _set_members(tx: Transaction, collection: str, members: list[str], now: float) -> None:
    await tx.execute("DELETE FROM collection_members WHERE collection = ?", (collection,))
    await tx.executemany("INSERT INTO collection_members (collection, alias, position) VALUES (?, ?, ?)",
                         [(collection, alias, i) for i, alias in enumerate(members)])
    await tx.execute("UPDATE collections SET updated_at = ? WHERE name = ?", (now, collection))


async def accept(db: Database, suggestion_id: int, *, by: str = "user", now: float | None = None
                 ) -> tuple[SuggestionRow, list[str]]:
    """Apply an open suggestion: the collection's members change, the suggestion is accepted and the
    change log says why, all in one commit. Returns the suggestion as decided and the new members."""
    now = time.time() if now is None else now
    async with db.transaction() as tx:
        row = await tx.fetchone("SELECT * FROM suggestions WHERE id = ?", (suggestion_id,))
        if row is None:
            raise NotFound(f"no suggestion with id {suggestion_id}")
        s = _suggestion(row)
        if s.state != "open":
            raise BadRequest(f"suggestion {suggestion_id} is {s.state}, not open")
        members = [r[0] for r in await tx.fetchall(
            "SELECT alias FROM collection_members WHERE collection = ? ORDER BY position", (s.collection,))]
        after = _new_members(s, members)
        await _set_members(tx, s.collection, after, now)
        await tx.execute("UPDATE suggestions SET state = 'accepted', open_key = NULL, decided_at = ?, decided_by = ?"
                         " WHERE id = ?", (now, by, suggestion_id))
        await log_change(tx, "collection.members", s.collection, {
            "suggestion": s.id, "kind": s.kind, "alias": s.alias, "replaces": s.replaces or None, "by": by,
            "reason": s.reason, "before": members, "members": after})
    return await get_suggestion(db, suggestion_id), after


async def member_changes(db: Reader, collection: str | None = None) -> list[dict[str, Any]]:
    """The change log's membership changes made from suggestions, oldest first."""
    sql = "SELECT at, subject, detail FROM changes WHERE what = 'collection.members'"
    rows = await db.fetchall(sql + (" AND subject = ?" if collection else "") + " ORDER BY id",
                             (collection,) if collection else ())
    return [{"at": r["at"], "collection": r["subject"], **json.loads(r["detail"])} for r in rows]


# ---- shadow answers ----------------------------------------------------------------------------

@dataclass
class ShadowRecord:
    call: str
    conversation: str
    turn: int
    alias: str
    collection: str
    status: str
    seconds: float = 0.0
    answer: str = ""
    tool_calls: list[dict[str, Any]] = field(default_factory=list)
    error: str = ""
    tokens_in: int = 0
    tokens_out: int = 0
    at: float = field(default_factory=time.time)


async def record_shadow(db: Database, s: ShadowRecord) -> None:
    await db.write(
        "INSERT INTO shadow_calls (call, conversation, turn, alias, collection, status, seconds, answer, tool_calls,"
        " error, tokens_in, tokens_out, at) VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?)",
        (s.call, s.conversation, s.turn, s.alias, s.collection, s.status, round(s.seconds, 3), s.answer,
         json.dumps(s.tool_calls), s.error[-500:], s.tokens_in, s.tokens_out, s.at))


async def shadow_calls(db: Reader, conversation: str | None = None) -> list[ShadowRecord]:
    sql = "SELECT * FROM shadow_calls" + (" WHERE conversation = ?" if conversation else "") + " ORDER BY at"
    rows = await db.fetchall(sql, (conversation,) if conversation else ())
    return [ShadowRecord(r["call"], r["conversation"], r["turn"], r["alias"], r["collection"], r["status"],
                         r["seconds"], read_text(r["answer"], db.dialect), json.loads(r["tool_calls"]),
                         read_text(r["error"], db.dialect), r["tokens_in"], r["tokens_out"], r["at"]) for r in rows]
