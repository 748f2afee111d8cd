"""Rate limits in the store, shared by every process on the data folder.

Tables (migration ``limits_001``): ``user_limits`` (what the user set, and what was learned from
error text), ``quotas`` (windows providers reported), ``inflight`` (admitted calls not yet in the
ledger), ``model_states`` (rests, strikes, pending retirement), ``connection_states`` (pauses) and
``alerts``. The decisions live in ``limits.py``; this module only reads and writes.
"""

from __future__ import annotations

import logging
import os
import socket
import time
from collections.abc import Iterable
from dataclasses import dataclass, field, replace
from typing import Any

import anyio

from benchwarmers_mcp.store import config_version, facts, ledger, replicas
from benchwarmers_mcp.store.db import Database, Row, Transaction, placeholders
from benchwarmers_mcp.store.db import Reader as Reader  # re-exported for the pacing code
from benchwarmers_mcp.store.endpoints import Endpoint, copy_of
from benchwarmers_mcp.store.endpoints import from_row as endpoint_row
from benchwarmers_mcp.store.portable import read_text

log = logging.getLogger("benchwarmers.limits")
LIMIT_NAMES = ("rpm", "rpd", "rpmo", "tpm", "tpd")
CONNECTION_OF = "COALESCE(e.connection, e.name)"
# A reported window's length by its name (unnamed: a minute), here and in SQL alike.
WINDOW_SECONDS = {"minute": 60.0, "hour": 3600.0, "day": 86400.0}
SAME_WINDOW = 1.0  # two reports of one window: their resets this close (replies' timing and rounding)
_LENGTH_SQL = "CASE q.span WHEN 'hour' THEN 3600 WHEN 'day' THEN 86400 ELSE 60 END"
# A reported window that still applies at ?: running (as reported), or reset and renewed (it was
# nearly used up when last reported, and its successor is not over): ``pacing.renewed``.
APPLIES_SQL = (f"((q.reset_at > ? AND q.remaining IS NOT NULL) OR (q.lim IS NOT NULL AND q.remaining IS NOT NULL"
               f" AND q.remaining * 4 <= q.lim AND q.reset_at + {_LENGTH_SQL} > ?))")


@dataclass(frozen=True)
class QuotaRecord:
    """One window a provider told us about. ``scope`` is "model" or "connection"."""

    metric: str
    window: str
    limit: int | None = None
    remaining: int | None = None
    reset_at: float | None = None
    scope: str = "model"
    source: str = "headers"


@dataclass(frozen=True)
class Gate:
    """Everything a call needs to know before it goes out, read in one query."""

    endpoint: Endpoint
    limited: bool = False
    rest_until: float | None = None
    rest_why: str | None = None
    strikes: int = 0
    pending_retire: bool = False
    paused_until: float | None = None
    paused_why: str | None = None

    @property
    def connection(self) -> str:
        return self.endpoint.connection_name


# the parameters, in order: alias, alias, now, now, alias, endpoint
GATE_SQL = f"""
SELECT e.*,
  EXISTS (SELECT 1 FROM user_limits u WHERE (u.scope = 'connection' AND u.subject = {CONNECTION_OF})
          OR (u.scope = 'model' AND u.subject = ?)) AS limited,
  EXISTS (SELECT 1 FROM quotas q WHERE q.connection = {CONNECTION_OF} AND q.alias IN ('', ?)
          AND {APPLIES_SQL}) AS quoted,
  s.rest_until, s.rest_why, s.strikes, s.pending_retire_at, c.paused_until, c.paused_why
FROM endpoints e
LEFT JOIN model_states s ON s.alias = ?
LEFT JOIN connection_states c ON c.connection = {CONNECTION_OF}
WHERE e.name = ?
"""


# what a gate reads live when its endpoint and user limits are kept: the configuration's stamp, the
# reported windows, the model's rest and the connection's pause. Parameters: connection, alias, now,
# now, alias, connection
LIVE_GATE_SQL = f"""
SELECT v.stamp,
  EXISTS (SELECT 1 FROM quotas q WHERE q.connection = ? AND q.alias IN ('', ?) AND {APPLIES_SQL}) AS quoted,
  s.rest_until, s.rest_why, s.strikes, s.pending_retire_at, c.paused_until, c.paused_why
FROM config_version v
LEFT JOIN model_states s ON s.alias = ?
LEFT JOIN connection_states c ON c.connection = ?
WHERE v.id = 1
"""


async def gate(db: Database, endpoint: str, alias: str, now: float) -> Gate | None:
    """The gate of a call to ``alias`` on ``endpoint`` (None: no such endpoint). The endpoint and
    whether a user limit applies are kept while the configuration is unchanged (``config_version``):
    then it is one statement, the stamp with what changes per call (windows, rests, pauses)."""
    key = ("limits.gate", endpoint, alias)
    seen = config_version.peek(db, key)
    if seen is not None:
        kept_at, (kept, limited) = seen
        connection = kept.connection_name
        live = await db.fetchone(LIVE_GATE_SQL, (connection, alias, now, now, alias, connection))
        at = None if live is None else int(live["stamp"])
        if live is not None and at == kept_at:
            return _gate(copy_of(kept), bool(limited), live)
    else:
        at = await config_version.stamp(db)
    row = await db.fetchone(GATE_SQL, (alias, alias, now, now, alias, endpoint))
    if row is None:
        return None
    found = endpoint_row(row)
    config_version.keep(db, at, key, (copy_of(found), bool(row["limited"])))
    return _gate(found, bool(row["limited"]), row)


def _gate(endpoint: Endpoint, limited: bool, row: Row) -> Gate:
    return Gate(endpoint, limited or bool(row["quoted"]), row["rest_until"], row["rest_why"], row["strikes"] or 0,
                row["pending_retire_at"] is not None, row["paused_until"], row["paused_why"])


# -- limits the user set (and limits learned from error text) --

@dataclass(frozen=True)
class UserLimit:
    scope: str  # "connection" or "model"
    subject: str  # the connection name or the model alias
    name: str  # rpm, rpd, rpmo, tpm, tpd
    value: int
    source: str = "user"  # or "learned"


async def set_limit(db: Database, scope: str, subject: str, name: str, value: int | None) -> None:
    """Set a user limit, or remove it when ``value`` is None."""
    async with db.transaction() as tx:
        if value is None:
            await tx.execute("DELETE FROM user_limits WHERE scope = ? AND subject = ? AND name = ? AND source = 'user'",
                             (scope, subject, name))
            return
        await tx.execute(
            "INSERT INTO user_limits (scope, subject, name, source, value, updated_at) VALUES (?, ?, ?, 'user', ?, ?)"
            " ON CONFLICT (scope, subject, name, source) DO UPDATE SET value = excluded.value,"
            " updated_at = excluded.updated_at", (scope, subject, name, value, time.time()))


async def learn_limit(tx: Transaction, scope: str, subject: str, name: str, value: int) -> None:
    """A limit read from error text: it only ever tightens."""
    await tx.execute(
        "INSERT INTO user_limits (scope, subject, name, source, value, updated_at) VALUES (?, ?, ?, 'learned', ?, ?)"
        " ON CONFLICT (scope, subject, name, source) DO UPDATE SET value = CASE WHEN excluded.value < user_limits.value"
        " THEN excluded.value ELSE user_limits.value END, updated_at = excluded.updated_at",
        (scope, subject, name, value, time.time()))


async def limits_for(db: Reader, connection: str, alias: str | None) -> list[UserLimit]:
    """The limits that apply: a user's value beats a learned one for the same scope and name."""
    rows = await db.fetchall(
        "SELECT scope, subject, name, value, source FROM user_limits WHERE (scope = 'connection' AND subject = ?)"
        " OR (scope = 'model' AND subject = ?) ORDER BY source DESC", (connection, alias or ""))
    chosen: dict[tuple[str, str, str], UserLimit] = {}
    for r in rows:  # 'user' comes before 'learned' in descending order, so the user's value is kept
        chosen.setdefault((r["scope"], r["subject"], r["name"]), UserLimit(*r))
    return list(chosen.values())


async def all_limits(db: Database) -> list[UserLimit]:
    rows = await db.fetchall("SELECT scope, subject, name, value, source FROM user_limits"
                             " ORDER BY scope, subject, name, source")
    return [UserLimit(*r) for r in rows]


# -- windows providers reported --

@dataclass(frozen=True)
class StoredQuota:
    connection: str
    alias: str
    record: QuotaRecord
    observed_at: float


def _quota(row: Row) -> StoredQuota:
    record = QuotaRecord(row["metric"], row["span"], row["lim"], row["remaining"], row["reset_at"],
                         "model" if row["alias"] else "connection", row["source"])
    return StoredQuota(row["connection"], row["alias"], record, row["observed_at"])


async def live_quotas(db: Reader, connection: str, alias: str, now: float) -> list[StoredQuota]:
    """The reported windows that apply to a call now (``APPLIES_SQL``)."""
    rows = await db.fetchall(f"SELECT * FROM quotas q WHERE q.connection = ? AND q.alias IN ('', ?) AND {APPLIES_SQL}",
                             (connection, alias, now, now))
    return [_quota(r) for r in rows]


async def shown_quotas(db: Database, since: float) -> list[StoredQuota]:
    rows = await db.fetchall("SELECT * FROM quotas WHERE observed_at >= ? ORDER BY connection, alias, metric, span",
                             (since,))
    return [_quota(r) for r in rows]


def merged(old: StoredQuota | None, new: QuotaRecord, observed_at: float,
           now: float) -> tuple[QuotaRecord, float] | None:
    """What is kept when a reply reports a window already stored (None: the stored one stays).

    Replies come back in any order. A report of the window the stored one is about (its reset within
    ``SAME_WINDOW``) keeps the lowest ``remaining``: the provider's count only falls within a window,
    so the lowest is its latest word, whichever call it came with. A report of a later window
    replaces it; one of a window already over is dropped."""
    if old is None:
        return new, observed_at
    o = old.record
    new = replace(new, limit=o.limit if new.limit is None else new.limit)
    if new.reset_at is None or o.reset_at is None:
        return (new, observed_at) if observed_at >= old.observed_at else None
    if new.reset_at < o.reset_at - SAME_WINDOW:
        return None
    if new.reset_at > o.reset_at + SAME_WINDOW or o.reset_at <= now:
        return new, observed_at
    known = [r for r in (o.remaining, new.remaining) if r is not None]
    return (replace(new, remaining=min(known) if known else None, reset_at=max(o.reset_at, new.reset_at)),
            max(observed_at, old.observed_at))


async def save_quotas(tx: Transaction, connection: str, alias: str, records: Iterable[QuotaRecord],
                      observed_at: float, now: float | None = None) -> None:
    """Windows a reply reported (``merged`` with what is stored). ``observed_at`` is when the call it
    came with was sent: what was sent after it is what the provider's ``remaining`` does not count."""
    now = observed_at if now is None else now
    for r in records:
        subject = alias if r.scope == "model" else ""
        row = await tx.fetchone("SELECT * FROM quotas WHERE connection = ? AND alias = ? AND metric = ? AND span = ?",
                                (connection, subject, r.metric, r.window))
        kept = merged(None if row is None else _quota(row), r, observed_at, now)
        if kept is None:
            continue
        record, seen = kept
        await tx.execute(
            "INSERT INTO quotas (connection, alias, metric, span, lim, remaining, reset_at, source, observed_at)"
            " VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?) ON CONFLICT (connection, alias, metric, span) DO UPDATE SET"
            " lim = excluded.lim, remaining = excluded.remaining, reset_at = excluded.reset_at,"
            " source = excluded.source, observed_at = excluded.observed_at",
            (connection, subject, record.metric, record.window, record.limit, record.remaining, record.reset_at,
             record.source, seen))
    await tx.execute("DELETE FROM quotas WHERE connection = ? AND observed_at < ? AND"
                     " (reset_at IS NULL OR reset_at < ?)", (connection, now - 7 * 86400, now))


# -- what has been spent: the ledger plus calls in flight --

@dataclass(frozen=True)
class Spend:
    t: float  # when it was sent
    requests: int
    tokens_in: int
    tokens_out: int
    inflight: bool = False  # not settled yet (no reply has reported on it)


async def spends(db: Reader, connection: str, alias: str | None, since: float) -> list[Spend]:
    """Ledger rows sent since ``since`` and every call in flight, oldest first (``alias`` None: the
    whole connection)."""
    which = "connection = ?" + (" AND alias = ?" if alias else "")
    params: tuple[Any, ...] = (connection, alias) if alias else (connection,)
    rows = await db.fetchall(
        f"SELECT t, attempts, tokens_in, tokens_out, 0 FROM usage WHERE {which} AND t >= ? AND attempts > 0"
        f" UNION ALL SELECT started, 1, tokens, 0, 1 FROM inflight WHERE {which}"
        " ORDER BY 1", (*params, since, *params))
    return [Spend(r[0], r[1], r[2], r[3], bool(r[4])) for r in rows]


# -- calls in flight: admitted, not settled yet; a crash's are booked to the ledger --
#
# An entry names the process that admitted it (its host and pid). It leaves when its call settles
# (``_release``); one a dead process left is *booked*: written to the ledger as an interrupted call,
# tokens unknown (``ledger.INTERRUPTED``), so the windows and the usage figures still count it. That
# happens on the next start for every entry whose process is gone (``book_orphans``: on this host a
# pid that no longer runs, or this process's own pid before it began; elsewhere a host and pid no
# recent replica row has), and for any entry once it expires (its call's deadline and the grace
# passed: no live call outlives its deadline). A live replica's entries are never booked at a start.
# Should a call settle after its entry was booked after all, its own row replaces the booking.

PROCESS_STARTED = time.time()  # before this process admits any call (the pacer imports this module)
HOST = socket.gethostname()

_BOOK_SQL = ("INSERT INTO usage (t, alias, connection, endpoint, served, status, attempts, tokens_in, tokens_out,"
             " reasoning, seconds, caller, purpose, key_name, tokens_unknown, ticket)"
             f" SELECT i.started, i.alias, i.connection, COALESCE(m.endpoint, i.connection), COALESCE(m.served, i.alias),"
             f" '{ledger.INTERRUPTED}', 1, i.tokens, 0, 0, 0, 'unknown', '', '', 1, i.id"
             " FROM inflight i LEFT JOIN models m ON m.alias = i.alias WHERE ")


async def expire_inflight(tx: Transaction, now: float) -> None:
    """Entries past their expiry: booked to the ledger (their process died, or their call would
    have ended), then removed."""
    await tx.execute(_BOOK_SQL + "i.expires < ?", (now,))
    await tx.execute("DELETE FROM inflight WHERE expires < ?", (now,))


async def add_inflight(tx: Transaction, connection: str, alias: str, tokens: int, started: float,
                       expires: float, *, host: str = HOST, pid: int | None = None) -> int:
    """An admitted call's entry, owned by this process (``host`` and ``pid`` name another: tests)."""
    return await tx.insert("INSERT INTO inflight (connection, alias, tokens, started, expires, host, pid)"
                           " VALUES (?, ?, ?, ?, ?, ?, ?)",
                           (connection, alias, tokens, started, expires, host, os.getpid() if pid is None else pid))


async def _release(tx: Transaction, tickets: tuple[int, ...]) -> None:
    """A settled call's entries leave; any that was booked meanwhile leaves the ledger (the call's own
    row, written in the same transaction, replaces it)."""
    if await tx.execute(f"DELETE FROM inflight WHERE id IN ({placeholders(tickets)})", tickets) < len(tickets):
        await tx.execute(f"DELETE FROM usage WHERE tokens_unknown = 1 AND ticket IN ({placeholders(tickets)})",
                         tickets)


def _running(pid: int) -> bool:
    """Whether a process of this host runs with ``pid`` (on Windows: assumed, as no probe is safe there)."""
    if os.name == "nt" or pid <= 0:
        return True
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    except PermissionError:
        return True  # someone else's process
    return True


def orphaned(host: str, pid: int, started: float, live: set[tuple[str, int]]) -> bool:
    """Whether the process that admitted an entry is gone: ``live`` holds the host and pid of every
    replica seen lately. An entry from before owners were kept (no host) waits for its expiry."""
    if not host:
        return False
    if host != HOST:
        return (host, pid) not in live
    if pid == os.getpid():
        return started < PROCESS_STARTED  # this pid's previous life (a container's pid 1, restarted)
    return not _running(pid)


async def book_orphans(db: Database, now: float) -> int:
    """At start: every entry whose process is gone or that expired, booked to the ledger (tokens
    unknown) and removed; how many."""
    found = await db.fetchall("SELECT id, host, pid, started, expires FROM inflight")
    if not found:
        return 0
    live = {(r["host"], r["pid"]) for r in await replicas.recent(db, now)}
    ids = tuple(r["id"] for r in found
                if r["expires"] < now or orphaned(r["host"], r["pid"], r["started"], live))
    if ids:
        async with db.transaction() as tx:
            booked = await tx.execute(_BOOK_SQL + f"i.id IN ({placeholders(ids)})", ids)
            await tx.execute(f"DELETE FROM inflight WHERE id IN ({placeholders(ids)})", ids)
        log.warning("%d call(s) in flight when a server stopped without settling them: in the ledger now as"
                    " interrupted, tokens unknown", booked)
    return len(ids)


async def inflight_count(db: Database) -> int:
    return int(await db.fetchval("SELECT COUNT(*) FROM inflight") or 0)


# -- after a call: one transaction for the ledger row and everything learned --

@dataclass
class Settlement:
    row: ledger.UsageRow  # its ``t`` is when the call was sent (its last attempt)
    tickets: tuple[int, ...] = ()  # the call's in-flight entries, one per attempt a limit counted
    quotas: list[QuotaRecord] = field(default_factory=list)
    learned: list[tuple[str, int]] = field(default_factory=list)
    rest: tuple[float, str] | None = None
    strike: tuple[int, float, str] | None = None  # (strikes that rest it, rest until, why)
    clear_strikes: bool = False
    clear_pending: bool = False
    pause: tuple[float, str] | None = None
    retire_why: str | None = None
    alerts: list[tuple[str, str, str]] = field(default_factory=list)  # (kind, subject, message)
    facts: list[tuple[str, Any, str]] = field(default_factory=list)  # (fact, value, evidence) the reply taught

    @property
    def only_the_row(self) -> bool:
        """Nothing but the ledger row to write (every other field at its default): the fields
        compared as one dict with the defaults' (every call asks; building a second Settlement to
        compare with cost more than the rest of the settling)."""
        return {**vars(self), "row": None} == _BARE


_BARE = {**vars(Settlement(ledger.UsageRow("", "", "", "", ""))), "row": None}


async def settle(db: Database, s: Settlement) -> None:
    """The call's row and what it taught, committed whole even if the call's task is cancelled
    meanwhile: the row alone as a record (``Database.record``: no shield needed when the writer is
    free), anything more in one transaction under a shield."""
    if s.only_the_row:  # the hot path: one autocommit statement, as the ledger row alone always was
        await ledger.append(db, s.row)
        return
    with anyio.CancelScope(shield=True):
        await _settle_all(db, s)


async def _settle_all(db: Database, s: Settlement) -> None:
    now = time.time()
    alias, connection = s.row.alias, s.row.connection
    async with db.transaction() as tx:
        await ledger.insert(tx, s.row)
        if s.tickets:
            await _release(tx, s.tickets)
        if s.quotas:
            await save_quotas(tx, connection, alias, s.quotas, s.row.t, now)
        for name, value in s.learned:
            await learn_limit(tx, "model", alias, name, value)
        if s.strike is not None:
            await _strike(tx, alias, connection, s.strike, now)
        if s.rest is not None:
            await rest(tx, alias, connection, *s.rest)
        if s.clear_strikes or s.clear_pending:
            sets = ", ".join(part for part, wanted in (("strikes = 0", s.clear_strikes),
                                                       ("pending_retire_at = NULL, pending_why = NULL",
                                                        s.clear_pending)) if wanted)
            await tx.execute(f"UPDATE model_states SET {sets}, updated_at = ? WHERE alias = ?", (now, alias))
        if s.retire_why is not None:
            await _state(tx, alias, connection, now)
            await tx.execute("UPDATE model_states SET pending_retire_at = COALESCE(pending_retire_at, ?),"
                             " pending_why = ? WHERE alias = ?", (now, s.retire_why, alias))
        if s.pause is not None:
            await pause(tx, connection, *s.pause)
        for kind, subject, message in s.alerts:
            await raise_alert(tx, kind, subject, message)
        if s.facts:
            await learn_facts(tx, alias, s.facts)


async def learn_facts(tx: Transaction, alias: str, taught: Iterable[tuple[str, Any, str]]) -> None:
    """Facts a call's reply taught about its model, and the model row's effective facts after them."""
    for fact, value, evidence in taught:
        await facts.learn(tx, alias, fact, value, evidence)
    await facts.recompute(tx, alias)


async def _state(tx: Transaction, alias: str, connection: str, now: float) -> None:
    await tx.execute("INSERT INTO model_states (alias, connection, strikes, updated_at) VALUES (?, ?, 0, ?)"
                     " ON CONFLICT (alias) DO UPDATE SET connection = excluded.connection,"
                     " updated_at = excluded.updated_at", (alias, connection, now))


async def rest(tx: Transaction, alias: str, connection: str, until: float, why: str) -> None:
    await _state(tx, alias, connection, time.time())
    await tx.execute("UPDATE model_states SET rest_until = ?, rest_why = ? WHERE alias = ?", (until, why, alias))


async def _strike(tx: Transaction, alias: str, connection: str, strike: tuple[int, float, str], now: float) -> None:
    limit, until, why = strike
    await _state(tx, alias, connection, now)
    await tx.execute("UPDATE model_states SET strikes = strikes + 1 WHERE alias = ?", (alias,))
    await tx.execute("UPDATE model_states SET strikes = 0, rest_until = ?, rest_why = ? WHERE alias = ? AND strikes >= ?",
                     (until, why, alias, limit))


async def pause(tx: Transaction, connection: str, until: float, why: str) -> None:
    await tx.execute("INSERT INTO connection_states (connection, paused_until, paused_why, updated_at)"
                     " VALUES (?, ?, ?, ?) ON CONFLICT (connection) DO UPDATE SET paused_until = excluded.paused_until,"
                     " paused_why = excluded.paused_why, updated_at = excluded.updated_at",
                     (connection, until, why, time.time()))


async def raise_alert(tx: Transaction, kind: str, subject: str, message: str) -> None:
    """An alert, unless the same one is already open."""
    open_one = await tx.fetchone("SELECT 1 FROM alerts WHERE kind = ? AND subject = ? AND cleared_at IS NULL",
                                 (kind, subject))
    if open_one is None:
        await tx.execute("INSERT INTO alerts (at, kind, subject, message) VALUES (?, ?, ?, ?)",
                         (time.time(), kind, subject, message[:1000]))


async def open_alerts(db: Database) -> list[dict[str, Any]]:
    """Open alerts the user has not dismissed (``store/alerts.py`` has them all, with their detail)."""
    rows = await db.fetchall("SELECT id, at, kind, subject, message FROM alerts"
                             " WHERE cleared_at IS NULL AND dismissed_at IS NULL ORDER BY at")
    return [{**dict(r), "message": read_text(r["message"], db.dialect)} for r in rows]


async def resume(db: Database, *, connection: str | None = None, alias: str | None = None) -> int:
    """End a connection's pause or a model's rest now, and clear their alerts. Returns rows changed."""
    now = time.time()
    changed = 0
    async with db.transaction() as tx:
        if connection:
            changed += await tx.execute("UPDATE connection_states SET paused_until = NULL, paused_why = NULL,"
                                        " updated_at = ? WHERE connection = ? AND paused_until IS NOT NULL",
                                        (now, connection))
            await tx.execute("UPDATE alerts SET cleared_at = ? WHERE subject = ? AND kind IN ('auth', 'billing')"
                             " AND cleared_at IS NULL", (now, connection))
        if alias:
            changed += await tx.execute("UPDATE model_states SET rest_until = NULL, rest_why = NULL, strikes = 0,"
                                        " updated_at = ? WHERE alias = ? AND rest_until IS NOT NULL", (now, alias))
    return changed


# -- who is resting --

def rests_now(alias: str) -> str:
    """An SQL condition: the model named by ``alias`` (a column) rests now, after a limit or
    failures, or on a paused connection (``resting_aliases`` for one model; parameters: now, now).
    A route turn's claim asks it of the conversation's member in its own statement."""
    return (f"(EXISTS (SELECT 1 FROM model_states s WHERE s.alias = {alias} AND s.rest_until > ?)"
            " OR EXISTS (SELECT 1 FROM models m, endpoints e, connection_states p WHERE m.alias ="
            f" {alias} AND e.name = m.endpoint AND p.connection = {CONNECTION_OF} AND p.paused_until > ?))")


async def resting_aliases(db: Database, now: float) -> list[str]:
    """Models resting after a limit or failures, and every model on a paused connection. Read on
    every panel and route turn, so the paused connections lead (``CROSS JOIN`` keeps that order in
    SQLite): with none paused, the usual case, nothing else is read, where joining from the models
    walked the whole bench (29 -> 11 us with 43 models)."""
    rows = await db.fetchall(
        "SELECT alias FROM model_states WHERE rest_until > ? UNION SELECT m.alias FROM connection_states c"
        f" CROSS JOIN endpoints e CROSS JOIN models m WHERE c.paused_until > ? AND {CONNECTION_OF} = c.connection"
        " AND m.endpoint = e.name", (now, now))
    return [r[0] for r in rows]


async def rests(db: Database, now: float) -> list[dict[str, Any]]:
    rows = await db.fetchall("SELECT alias, connection, rest_until, rest_why FROM model_states WHERE rest_until > ?"
                             " ORDER BY connection, alias", (now,))
    return [{**dict(r), "rest_why": read_text(r["rest_why"], db.dialect)} for r in rows]


async def pending_retirements(db: Database) -> list[dict[str, Any]]:
    rows = await db.fetchall("SELECT alias, connection, pending_retire_at, pending_why FROM model_states"
                             " WHERE pending_retire_at IS NOT NULL ORDER BY alias")
    return [{**dict(r), "pending_why": read_text(r["pending_why"], db.dialect)} for r in rows]


async def pauses(db: Database, now: float) -> dict[str, dict[str, Any]]:
    rows = await db.fetchall("SELECT connection, paused_until, paused_why FROM connection_states"
                             " WHERE paused_until > ?", (now,))
    return {r["connection"]: {"until": r["paused_until"], "why": read_text(r["paused_why"], db.dialect)} for r in rows}


async def connections(db: Database) -> list[str]:
    rows = await db.fetchall(f"SELECT DISTINCT {CONNECTION_OF} FROM endpoints e ORDER BY 1")
    return [r[0] for r in rows]


async def model_connections(db: Database) -> dict[str, str]:
    rows = await db.fetchall(f"SELECT m.alias, {CONNECTION_OF} FROM models m JOIN endpoints e ON e.name = m.endpoint")
    return {r[0]: r[1] for r in rows}
