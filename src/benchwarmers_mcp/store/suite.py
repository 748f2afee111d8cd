"""The review suite's rows: repositories, planted units, runs, their items, answers with scores,
connection leases and the suite's own settings.

A run is planned whole (one item per model, task and repeat) before it starts, so a restart
knows what is left. An item is *held* by one executor while it is asked (``holder``,
``held_until``); its answer and its ``done`` state are written in one transaction that first
checks the item is not done already, so no item is ever answered twice. A lease per connection
(``suite_leases``) lets one suite call at a time reach a connection, across every process on the
data folder, with the run's gap between calls. Both holds are short and renewed while their
executor runs (``renew_holds``), so a process that died lets go of them within one hold.

``take_lease`` and ``settle_item`` read then write inside one transaction: they rely on the
store's one-writer-at-a-time transactions (see the package docstring).
"""

from __future__ import annotations

import json
import time
from dataclasses import asdict, dataclass, field
from typing import Any

from benchwarmers_mcp.errors import BadRequest, NotFound
from benchwarmers_mcp.store.db import Database
from benchwarmers_mcp.store.portable import read_text

RUN_STATES = ("running", "done", "stopped", "failed")


# ---- repositories and what was planted in them ---------------------------------------------

async def add_repo(db: Database, name: str, path: str) -> None:
    await db.write("INSERT INTO suite_repos (name, path, added_at) VALUES (?, ?, ?)"
                   " ON CONFLICT (name) DO UPDATE SET path = excluded.path", (name, path, time.time()))


async def remove_repo(db: Database, name: str) -> bool:
    return await db.write("DELETE FROM suite_repos WHERE name = ?", (name,)) > 0


async def repos(db: Database) -> dict[str, str]:
    return {r["name"]: r["path"] for r in await db.fetchall("SELECT name, path FROM suite_repos ORDER BY name")}


async def used_units(db: Database, repo: str) -> set[str]:
    return {r[0] for r in await db.fetchall("SELECT unit FROM suite_planted WHERE repo = ?", (repo,))}


async def claim_units(db: Database, repo: str, units: list[tuple[str, str]]) -> set[str]:
    """Record (unit, task) as planted; returns the units this call won (another process may win one)."""
    won: set[str] = set()
    now = time.time()
    async with db.transaction() as tx:
        for unit, task in units:
            if await tx.execute("INSERT INTO suite_planted (repo, unit, task, at) VALUES (?, ?, ?, ?)"
                                " ON CONFLICT (repo, unit) DO NOTHING", (repo, unit, task, now)):
                won.add(unit)
    return won


async def release_units(db: Database, repo: str, units: list[str]) -> None:
    async with db.transaction() as tx:
        for unit in units:
            await tx.execute("DELETE FROM suite_planted WHERE repo = ? AND unit = ?", (repo, unit))


# ---- settings -------------------------------------------------------------------------------

async def get_config(db: Database, name: str) -> Any:
    value = await db.fetchval("SELECT value FROM suite_config WHERE name = ?", (name,))
    return None if value is None else json.loads(value)


async def set_config(db: Database, name: str, value: Any) -> None:
    await db.write("INSERT INTO suite_config (name, value) VALUES (?, ?)"
                   " ON CONFLICT (name) DO UPDATE SET value = excluded.value", (name, json.dumps(value)))


# ---- runs and items -------------------------------------------------------------------------

@dataclass(frozen=True)
class PlannedItem:
    alias: str
    connection: str
    task: str


@dataclass(frozen=True)
class Item:
    id: int
    run: int
    seq: int
    alias: str
    connection: str
    task: str
    state: str
    attempts: int
    holder: str | None
    held_until: float | None
    rest_until: float | None
    last_error: str
    answer: int | None
    rests: int = 0  # rate limits it was given back for, in this run


def _item(row: Any, dialect: str) -> Item:
    return Item(row["id"], row["run"], row["seq"], row["alias"], row["connection"], row["task"], row["state"],
                row["attempts"], row["holder"], row["held_until"], row["rest_until"], read_text(row["last_error"], dialect),
                row["answer"], row["rests"])


async def create_run(db: Database, request: dict[str, Any], policy: dict[str, Any], items: list[PlannedItem],
                     origin: str = "cli") -> int:
    if not items:
        raise BadRequest("nothing to run: no (model, task) pair matched")
    now = time.time()
    async with db.transaction() as tx:
        run = await tx.insert("INSERT INTO suite_runs (created_at, origin, request, policy, state) VALUES"
                              " (?, ?, ?, ?, 'running')", (now, origin, json.dumps(request), json.dumps(policy)))
        assert run is not None
        await tx.executemany(
            "INSERT INTO suite_items (run, seq, alias, connection, task, updated_at) VALUES (?, ?, ?, ?, ?, ?)",
            [(run, i, it.alias, it.connection, it.task, now) for i, it in enumerate(items)])
    return run


async def run_row(db: Database, run: int) -> dict[str, Any]:
    row = await db.fetchone("SELECT * FROM suite_runs WHERE id = ?", (run,))
    if row is None:
        raise NotFound(f"no suite run {run}")
    out = dict(row)
    out["request"], out["policy"] = json.loads(out["request"]), json.loads(out["policy"])
    out["note"] = read_text(out["note"], db.dialect)
    counts = await db.fetchall("SELECT state, COUNT(*) FROM suite_items WHERE run = ? GROUP BY state", (run,))
    out["items"] = {r[0]: r[1] for r in counts}
    out["resting_until"] = await db.fetchval(
        "SELECT MIN(rest_until) FROM suite_items WHERE run = ? AND state = 'pending' AND rest_until > ?",
        (run, time.time()))
    return out


async def runs(db: Database, limit: int = 20) -> list[dict[str, Any]]:
    ids = [r[0] for r in await db.fetchall("SELECT id FROM suite_runs ORDER BY id DESC LIMIT ?", (limit,))]
    return [await run_row(db, i) for i in ids]


async def unfinished_runs(db: Database) -> list[int]:
    return [r[0] for r in await db.fetchall("SELECT id FROM suite_runs WHERE state = 'running' ORDER BY id")]


async def run_state(db: Database, run: int) -> str:
    state = await db.fetchval("SELECT state FROM suite_runs WHERE id = ?", (run,))
    if state is None:
        raise NotFound(f"no suite run {run}")
    return str(state)


async def finish_run(db: Database, run: int, state: str, note: str = "") -> bool:
    """Move a running run to ``state``; False when it was not running any more."""
    return await db.write("UPDATE suite_runs SET state = ?, note = ?, finished_at = ? WHERE id = ? AND state = "
                          "'running'", (state, note, time.time(), run)) > 0


async def items(db: Database, run: int, connection: str | None = None) -> list[Item]:
    params: list[Any]
    sql, params = "SELECT * FROM suite_items WHERE run = ?", [run]
    if connection is not None:
        sql, params = sql + " AND connection = ?", [run, connection]
    return [_item(r, db.dialect) for r in await db.fetchall(sql + " ORDER BY seq", params)]


async def open_items(db: Database, run: int) -> int:
    return int(await db.fetchval("SELECT COUNT(*) FROM suite_items WHERE run = ? AND state != 'done'", (run,)))


async def hold_item(db: Database, item: int, holder: str, until: float) -> bool:
    """Take an item to ask it: only a pending one, or one whose holder's time ran out."""
    now = time.time()
    return await db.write(
        "UPDATE suite_items SET state = 'asking', holder = ?, held_until = ?, attempts = attempts + 1, updated_at = ?"
        " WHERE id = ? AND (state = 'pending' OR (state = 'asking' AND (held_until IS NULL OR held_until < ?)))",
        (holder, until, now, item, now)) > 0


async def release_item(db: Database, item: int, holder: str, *, rest_until: float | None = None,
                       error: str = "") -> None:
    """Give an item back unanswered (a rate limit, a shutdown): it is asked again later. With
    ``rest_until`` (a rate limit) the item's ``rests`` goes up by one."""
    await db.write(
        "UPDATE suite_items SET state = 'pending', holder = NULL, held_until = NULL,"
        " attempts = CASE WHEN attempts > 0 THEN attempts - 1 ELSE 0 END, rests = rests + ?,"
        " rest_until = COALESCE(?, rest_until), last_error = ?, updated_at = ? WHERE id = ? AND holder = ?"
        " AND state = 'asking'", (0 if rest_until is None else 1, rest_until, error[:300], time.time(), item, holder))


async def renew_holds(db: Database, holder: str, until: float) -> None:
    """While an executor runs: its held items and its connection leases last until ``until``."""
    async with db.transaction() as tx:
        await tx.execute("UPDATE suite_items SET held_until = ? WHERE holder = ? AND state = 'asking'", (until, holder))
        await tx.execute("UPDATE suite_leases SET until = ? WHERE holder = ?", (until, holder))


async def model_rests(db: Database, run: int, alias: str) -> int:
    """How many times ``alias`` was given back for a rate limit in ``run``, over all its items."""
    return int(await db.fetchval("SELECT COALESCE(SUM(rests), 0) FROM suite_items WHERE run = ? AND alias = ?",
                                 (run, alias)))


@dataclass(frozen=True)
class AnswerRow:
    alias: str
    task: str
    status: str  # ok, empty, timeout, error, rate limited
    scored: bool
    outcome: str | None
    reason: str
    expects: str
    answer: str = ""
    error: str = ""
    seconds: float = 0.0
    found: bool = False
    invented: int = 0
    invented_claims: tuple[str, ...] = ()
    chances: int = 0
    wrong: int = 0
    named_line: int | None = None
    prompt_sha: str = ""
    tokens_in: int = 0
    tokens_out: int = 0
    item: int | None = None
    run: int | None = None
    at: float = field(default_factory=time.time)


ANSWER_COLUMNS = ("item", "run", "alias", "task", "at", "status", "seconds", "answer", "error", "scored", "outcome",
                  "reason", "expects", "found", "invented", "invented_claims", "chances", "wrong", "named_line",
                  "prompt_sha", "tokens_in", "tokens_out")


def _answer_values(row: AnswerRow) -> list[Any]:
    values = asdict(row)
    values["scored"], values["found"] = int(row.scored), int(row.found)
    values["invented_claims"] = json.dumps(list(row.invented_claims))
    return [values[c] for c in ANSWER_COLUMNS]


async def settle_item(db: Database, item: Item, holder: str, row: AnswerRow, *, skip_model: str = "") -> int | None:
    """The answer and its score, and the item done, in one transaction; None (nothing written) when
    the item was answered already or another executor holds it now. With ``skip_model`` (a model
    given up on), the model's other pending items in the run are done too, unasked, with that note."""
    async with db.transaction() as tx:
        current = await tx.fetchone("SELECT state, holder FROM suite_items WHERE id = ?", (item.id,))
        if current is None or current["state"] == "done" or current["holder"] != holder:
            return None
        marks = ", ".join("?" * len(ANSWER_COLUMNS))
        answer = await tx.insert(f"INSERT INTO suite_answers ({', '.join(ANSWER_COLUMNS)}) VALUES ({marks})",
                                 _answer_values(row))
        now = time.time()
        await tx.execute("UPDATE suite_items SET state = 'done', holder = NULL, held_until = NULL, answer = ?,"
                         " last_error = ?, updated_at = ? WHERE id = ?", (answer, row.error[:300], now, item.id))
        if skip_model:
            await tx.execute("UPDATE suite_items SET state = 'done', last_error = ?, updated_at = ? WHERE run = ?"
                             " AND alias = ? AND state = 'pending'", (skip_model[:300], now, item.run, item.alias))
    return answer


async def record_answer(db: Database, row: AnswerRow) -> int:
    """An answer scored outside a run (tests, imports)."""
    marks = ", ".join("?" * len(ANSWER_COLUMNS))
    async with db.transaction() as tx:
        answer = await tx.insert(f"INSERT INTO suite_answers ({', '.join(ANSWER_COLUMNS)}) VALUES ({marks})",
                                 _answer_values(row))
    assert answer is not None
    return answer


def _answer_dict(row: Any, dialect: str) -> dict[str, Any]:
    out = dict(row)
    for text in ("answer", "error", "reason"):
        if text in out:
            out[text] = read_text(out[text], dialect)
    out["scored"], out["found"] = bool(out["scored"]), bool(out["found"])
    out["invented_claims"] = json.loads(out["invented_claims"])
    return out


async def answers(db: Database, *, alias: str | None = None, task: str | None = None, run: int | None = None,
                  limit: int = 200, with_text: bool = True) -> list[dict[str, Any]]:
    columns = "*" if with_text else ", ".join(["id", *(c for c in ANSWER_COLUMNS if c != "answer")])
    where, params = _filters(alias=alias, task=task, run=run)
    rows = await db.fetchall(f"SELECT {columns} FROM suite_answers{where} ORDER BY id DESC LIMIT ?", [*params, limit])
    return [_answer_dict(r, db.dialect) for r in rows]


def _filters(**given: Any) -> tuple[str, list[Any]]:
    wanted = {k: v for k, v in given.items() if v is not None}
    if not wanted:
        return "", []
    return " WHERE " + " AND ".join(f"{k} = ?" for k in wanted), list(wanted.values())


async def score_rows(db: Database, alias: str | None = None) -> list[dict[str, Any]]:
    """Every answer's score (no texts): what the tallies are made of."""
    where, params = _filters(alias=alias)
    rows = await db.fetchall("SELECT alias, task, at, status, scored, outcome, reason, invented, chances, wrong"
                             f" FROM suite_answers{where} ORDER BY id", params)
    return [{**dict(r), "scored": bool(r["scored"])} for r in rows]


async def scored_tasks(db: Database) -> dict[str, dict[str, float]]:
    """Per alias: each task it has a score on, and when it last got one."""
    rows = await db.fetchall("SELECT alias, task, MAX(at) FROM suite_answers WHERE scored = 1 GROUP BY alias, task")
    out: dict[str, dict[str, float]] = {}
    for r in rows:
        out.setdefault(r[0], {})[r[1]] = r[2]
    return out


async def planned_open(db: Database) -> set[tuple[str, str]]:
    """(alias, task) pairs already waiting in an unfinished run: a new plan leaves them out."""
    rows = await db.fetchall("SELECT i.alias, i.task FROM suite_items i JOIN suite_runs r ON r.id = i.run"
                             " WHERE r.state = 'running' AND i.state != 'done'")
    return {(r[0], r[1]) for r in rows}


# ---- connection leases ----------------------------------------------------------------------

async def take_lease(db: Database, connection: str, holder: str, until: float) -> float | None:
    """Hold ``connection`` for one call; None when held, else when the current lease ends."""
    now = time.time()
    async with db.transaction() as tx:
        row = await tx.fetchone("SELECT holder, until FROM suite_leases WHERE connection = ?", (connection,))
        if row is not None and row["until"] > now and row["holder"] != holder:
            return float(row["until"])
        await tx.execute("INSERT INTO suite_leases (connection, holder, until) VALUES (?, ?, ?) ON CONFLICT"
                         " (connection) DO UPDATE SET holder = excluded.holder, until = excluded.until",
                         (connection, holder, until))
    return None


async def end_lease(db: Database, connection: str, holder: str, free_at: float) -> None:
    """Let go of a connection; the next call may start at ``free_at`` (now plus the gap)."""
    await db.write("UPDATE suite_leases SET holder = NULL, until = ? WHERE connection = ? AND holder = ?",
                   (free_at, connection, holder))


# ---- mining ---------------------------------------------------------------------------------

async def panel_prompt(db: Database, call: str) -> str | None:
    """The prompt the store kept for the panel a seat (or merger) call belongs to."""
    value = await db.fetchval("SELECT p.prompt FROM seats s JOIN panels p ON p.id = s.panel WHERE s.call = ?", (call,))
    return None if value is None else str(read_text(value, db.dialect))
