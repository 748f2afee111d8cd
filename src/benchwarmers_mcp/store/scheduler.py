"""The scheduler's state, shared by every process on the data folder (migration ``health_003``).

``leases``: who runs (one owner per name, until ``expires``; renewed while it lives). ``scheduler_jobs``:
per job, the latest slot it was due for, and the run going now with its heartbeat. ``scheduler_runs``:
every run logged (would run, running, ran, failed, skipped, not available, lost). The scheduler's
settings are one row of ``settings``.
"""

from __future__ import annotations

import json
from dataclasses import dataclass, field
from typing import Any

from benchwarmers_mcp.store.changes import log_change
from benchwarmers_mcp.store.db import Database, Row, Transaction

SETTINGS_NAME = "scheduler"


async def settings(db: Database) -> dict[str, Any]:
    raw = await db.fetchval("SELECT value FROM settings WHERE name = ?", (SETTINGS_NAME,))
    value = json.loads(raw) if raw else {}
    return value if isinstance(value, dict) else {}


async def save_settings(db: Database, value: dict[str, Any]) -> None:
    async with db.transaction() as tx:
        await tx.execute("INSERT INTO settings (name, value) VALUES (?, ?) ON CONFLICT (name) DO UPDATE"
                         " SET value = excluded.value", (SETTINGS_NAME, json.dumps(value)))
        await log_change(tx, "settings.scheduler", SETTINGS_NAME, value)


# -- leases --

async def take_lease(db: Database, name: str, owner: str, now: float, ttl: float) -> bool:
    """Hold (or renew) the lease ``name`` until ``now + ttl``, unless another owner holds one that
    has not expired. One transaction, so two processes never both win."""
    async with db.transaction() as tx:
        row = await tx.fetchone("SELECT owner, expires FROM leases WHERE name = ?", (name,))
        if row is not None and row["owner"] != owner and row["expires"] > now:
            return False
        await tx.execute(
            "INSERT INTO leases (name, owner, acquired, expires) VALUES (?, ?, ?, ?) ON CONFLICT (name) DO UPDATE"
            " SET owner = excluded.owner, expires = excluded.expires,"
            " acquired = CASE WHEN leases.owner = excluded.owner THEN leases.acquired ELSE excluded.acquired END",
            (name, owner, now, now + ttl))
        return True


async def drop_lease(db: Database, name: str, owner: str) -> None:
    await db.write("DELETE FROM leases WHERE name = ? AND owner = ?", (name, owner))


async def lease(db: Database, name: str) -> dict[str, Any] | None:
    row = await db.fetchone("SELECT * FROM leases WHERE name = ?", (name,))
    return None if row is None else dict(row)


# -- jobs and runs --

@dataclass(frozen=True)
class JobState:
    job: str
    last_due: float | None = None
    running_run: int | None = None
    running_owner: str | None = None
    heartbeat: float | None = None


async def job_states(db: Database) -> dict[str, JobState]:
    rows = await db.fetchall("SELECT * FROM scheduler_jobs")
    return {r["job"]: JobState(r["job"], r["last_due"], r["running_run"], r["running_owner"], r["heartbeat"])
            for r in rows}


@dataclass
class Claim:
    """What ``claim`` decided: ``run`` is the new run's id when it may start."""

    run: int | None = None
    busy: JobState | None = None
    lost: int | None = None  # a run whose process stopped, found and closed


async def claim(db: Database, job: str, *, owner: str, now: float, due: float | None, stale: float,
                trigger: str, note: str = "") -> Claim:
    """Start a run of ``job`` unless one is going (a heartbeat newer than ``stale`` seconds) or, for a
    scheduled run, this slot was already taken. Records the slot and the run in one transaction."""
    async with db.transaction() as tx:
        row = await tx.fetchone("SELECT * FROM scheduler_jobs WHERE job = ?", (job,))
        state = JobState(job) if row is None else JobState(job, row["last_due"], row["running_run"],
                                                           row["running_owner"], row["heartbeat"])
        out = Claim()
        if due is not None and state.last_due is not None and state.last_due >= due:
            return out
        if state.running_run is not None:
            if (state.heartbeat or 0.0) >= now - stale:
                out.busy = state
                if due is not None:
                    await tx.execute("INSERT INTO scheduler_runs (job, due, at, finished, status, trigger, note, owner)"
                                     " VALUES (?, ?, ?, ?, 'skipped', ?, 'still going', ?)",
                                     (job, due, now, now, trigger, owner))
                    await _set_due(tx, job, due)
                return out
            await tx.execute("UPDATE scheduler_runs SET status = 'lost', finished = ?, note = 'its process stopped'"
                             " WHERE id = ? AND finished IS NULL", (now, state.running_run))
            out.lost = state.running_run
        out.run = await tx.insert("INSERT INTO scheduler_runs (job, due, at, status, trigger, note, owner)"
                                  " VALUES (?, ?, ?, 'running', ?, ?, ?)", (job, due, now, trigger, note, owner))
        await tx.execute(
            "INSERT INTO scheduler_jobs (job, running_run, running_owner, heartbeat) VALUES (?, ?, ?, ?)"
            " ON CONFLICT (job) DO UPDATE SET running_run = excluded.running_run,"
            " running_owner = excluded.running_owner, heartbeat = excluded.heartbeat",
            (job, out.run, owner, now))
        if due is not None:
            await _set_due(tx, job, due)
        return out


async def _set_due(tx: Transaction, job: str, due: float) -> None:
    """The latest slot seen, never moved back."""
    await tx.execute("INSERT INTO scheduler_jobs (job, last_due) VALUES (?, ?) ON CONFLICT (job) DO UPDATE"
                     " SET last_due = CASE WHEN scheduler_jobs.last_due IS NULL"
                     " OR scheduler_jobs.last_due < excluded.last_due THEN excluded.last_due"
                     " ELSE scheduler_jobs.last_due END", (job, due))


async def mark_due(db: Database, job: str, due: float) -> bool:
    """Record a slot as seen without running it (log-only mode); False when it already was."""
    async with db.transaction() as tx:
        last = await tx.fetchone("SELECT last_due FROM scheduler_jobs WHERE job = ?", (job,))
        if last is not None and last["last_due"] is not None and last["last_due"] >= due:
            return False
        await _set_due(tx, job, due)
        return True


async def heartbeat(db: Database, job: str, run: int, now: float) -> None:
    await db.write("UPDATE scheduler_jobs SET heartbeat = ? WHERE job = ? AND running_run = ?", (now, job, run))


async def finish(db: Database, job: str, run: int, *, now: float, status: str, note: str = "",
                 detail: dict[str, Any] | None = None) -> None:
    """A run's end: its status, what it did, and ``note`` after the note it started with."""
    async with db.transaction() as tx:
        await tx.execute("UPDATE scheduler_runs SET finished = ?, status = ?, detail = ?,"
                         " note = CASE WHEN note = '' THEN ? ELSE note || '; ' || ? END WHERE id = ?",
                         (now, status, json.dumps(detail or {}, default=str), note[:1000], note[:1000], run))
        await tx.execute("UPDATE scheduler_jobs SET running_run = NULL, running_owner = NULL WHERE job = ?"
                         " AND running_run = ?", (job, run))


async def log_run(db: Database, job: str, *, due: float | None, now: float, status: str, trigger: str,
                  note: str = "", owner: str = "") -> int:
    """A run that did nothing but be logged (would run, not available)."""
    async with db.transaction() as tx:
        return await tx.insert("INSERT INTO scheduler_runs (job, due, at, finished, status, trigger, note, owner)"
                               " VALUES (?, ?, ?, ?, ?, ?, ?, ?)", (job, due, now, now, status, trigger, note, owner))


@dataclass(frozen=True)
class Run:
    id: int
    job: str
    due: float | None
    at: float
    finished: float | None
    status: str
    trigger: str
    note: str
    detail: dict[str, Any] = field(default_factory=dict)
    owner: str = ""


def _run(row: Row) -> Run:
    return Run(row["id"], row["job"], row["due"], row["at"], row["finished"], row["status"], row["trigger"],
               row["note"], json.loads(row["detail"] or "{}"), row["owner"])


async def runs(db: Database, *, job: str | None = None, limit: int = 50) -> list[Run]:
    """Runs, newest first."""
    where, params = ("WHERE job = ?", (job,)) if job else ("", ())
    rows = await db.fetchall(f"SELECT * FROM scheduler_runs {where} ORDER BY id DESC LIMIT ?", (*params, limit))
    return [_run(r) for r in rows]


async def run(db: Database, run_id: int) -> Run | None:
    row = await db.fetchone("SELECT * FROM scheduler_runs WHERE id = ?", (run_id,))
    return None if row is None else _run(row)


async def last_runs(db: Database) -> dict[str, Run]:
    """Each job's latest run that did something (not a skip or a would-run line)."""
    rows = await db.fetchall(
        "SELECT r.* FROM scheduler_runs r JOIN (SELECT job, MAX(id) AS id FROM scheduler_runs"
        " WHERE status NOT IN ('skipped', 'would run') GROUP BY job) l ON l.id = r.id")
    return {r["job"]: _run(r) for r in rows}
