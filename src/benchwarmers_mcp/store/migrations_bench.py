"""The schema's migrations after ``migrations.py``'s (that module was long enough): registered the
same way (``portable.migration``), and imported at the end of ``migrations.py``, so they come after
every migration there, in the order they are written here. Append-only, as there.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from benchwarmers_mcp.store import migrations as _before  # noqa: F401 (its migrations register first)
from benchwarmers_mcp.store.portable import drop_trigger, floor_of, migration, script, trigger

if TYPE_CHECKING:
    from benchwarmers_mcp.store.db import Transaction

CONFIG_STAMP_SEQUENCE = "config_version_stamp"
# config_001: the tables whose changes bump the configuration's stamp, and for each the columns an
# UPDATE bumps on when it changes one of them (None: any UPDATE); the rest are written per call
CONFIG_001_WATCHED: dict[str, tuple[str, ...] | None] = {
    "models": ("alias", "served", "endpoint", "family", "role", "ad_hoc", "vision", "tools", "context_window",
               "max_output", "options", "retired_at", "retired_why", "created_at"),  # all but last_used
    "endpoints": None,
    "collections": None,
    "collection_members": None,
    "settings": ("name", "value"),
    "user_limits": ("scope", "subject", "name", "source", "value"),  # a limit learned again: updated_at only
}


def _differs(column: str, dialect: str) -> str:
    """``OLD.column`` and ``NEW.column`` differ, NULL counted as a value."""
    op = "IS DISTINCT FROM" if dialect == "postgresql" else "IS NOT"
    return f"OLD.{column} {op} NEW.{column}"


def _fresh(dialect: str) -> str:
    """A stamp no change had before: a transaction rolled back takes its stamp with it for good."""
    return f"nextval('{CONFIG_STAMP_SEQUENCE}')" if dialect == "postgresql" else "random()"


def _bump(dialect: str, when: str = "1 = 1") -> str:
    """The trigger body that records a configuration change (``store/config_version.py``): the row
    written again if someone emptied the table, ``n`` one more, a stamp no change repeats."""
    return (f"INSERT INTO config_version (id, n, stamp) SELECT 1, 1, {_fresh(dialect)} WHERE {when}"
            " ON CONFLICT (id) DO UPDATE SET n = config_version.n + 1, stamp = excluded.stamp;")


@migration
async def config_001_version(tx: Transaction) -> None:
    """The configuration's stamp: one row that triggers rewrite in the statement that changes a
    model, an endpoint, a collection or its members, a setting or a user limit, so every process
    knows when what it kept of them is stale (``store/config_version.py``). A model's ``last_used``
    and rows written again unchanged do not count."""
    await script(tx, "CREATE TABLE config_version (id INTEGER NOT NULL PRIMARY KEY CHECK (id = 1),"
                     " n INTEGER NOT NULL, stamp INTEGER NOT NULL)")
    if tx.dialect == "postgresql":
        await tx.execute(f"CREATE SEQUENCE {CONFIG_STAMP_SEQUENCE}")
    await tx.execute(f"INSERT INTO config_version (id, n, stamp) VALUES (1, 0, {_fresh(tx.dialect)})")
    for table, columns in CONFIG_001_WATCHED.items():
        await trigger(tx, f"config_{table}_insert", table, _bump(tx.dialect), "INSERT")
        await trigger(tx, f"config_{table}_delete", table, _bump(tx.dialect), "DELETE")
        if columns is None:
            await trigger(tx, f"config_{table}_update", table, _bump(tx.dialect), "UPDATE")
        else:
            when = " OR ".join(_differs(c, tx.dialect) for c in columns)
            await trigger(tx, f"config_{table}_update", table, _bump(tx.dialect, when),
                          f"UPDATE OF {', '.join(columns)}")


# ratings_003: the tables whose inserts tally health (as ratings_002 wrote them), and which rows count
RATINGS_003_TALLIED = {"seats": "", "route_turns": " AND NEW.alias IS NOT NULL"}


async def _tally_trigger(tx: Transaction, table: str, only: str) -> None:
    """The tally's trigger on ``table``, its condition in the trigger's ``WHEN`` so the body can be
    ``INSERT ... VALUES``: SQLite runs an ``INSERT ... SELECT`` that reads its own table (here for
    ``MAX(seq)``) through a temporary table. A route turn's write on SQLite: 58.6 us with the tally
    of ``ratings_002``, 70.6 with ``seq`` set that way, 67.2 this way (the seq index's upkeep is the
    rest)."""
    when = f"NEW.status IN ('ok', 'error', 'timeout'){only}"
    body = ("INSERT INTO health_tally (alias, day, ok, failed, seq)"
            f" VALUES (NEW.alias, {floor_of('NEW.at / 86400', tx.dialect)},"
            " CASE WHEN NEW.status = 'ok' THEN 1 ELSE 0 END, CASE WHEN NEW.status = 'ok' THEN 0 ELSE 1 END,"
            " (SELECT COALESCE(MAX(seq), 0) + 1 FROM health_tally))"
            " ON CONFLICT (alias, day) DO UPDATE SET ok = health_tally.ok + excluded.ok,"
            " failed = health_tally.failed + excluded.failed, seq = excluded.seq;")
    await trigger(tx, f"health_tally_{table}", table, body, when=when)


@migration
async def ratings_003_health_tally_seq(tx: Transaction) -> None:
    """A change number on each ``health_tally`` row: every insert or update of a row sets ``seq`` to
    one more than the table's largest, so a reader that kept the tally reads only the rows changed
    since (``store/health_evidence.py``) instead of every model's every day on each rating read.
    Writers of every process take the store's one writer lock, so the numbers commit in order; the
    index makes the largest a B-tree lookup. Rows from before keep 0 (a first read reads them all)."""
    await script(tx, "ALTER TABLE health_tally ADD COLUMN seq INTEGER NOT NULL DEFAULT 0;"
                     " CREATE INDEX health_tally_seq ON health_tally (seq)")
    for table, only in RATINGS_003_TALLIED.items():
        await drop_trigger(tx, f"health_tally_{table}", table)
        await _tally_trigger(tx, table, only)


@migration
async def verdicts_002_scope(tx: Transaction) -> None:
    """The scope of the gateway key that sent each verdict: its collections as a JSON list, NULL
    for an unscoped key (every verdict before this). A scoped key's verdicts move only those
    collections' ratings (``store/ratings.py``), so the scope is kept with the verdict itself: the
    key may be revoked, or its name taken by another, after it judged."""
    await script(tx, "ALTER TABLE verdicts ADD COLUMN scope TEXT")


@migration
async def limits_002_inflight_owners(tx: Transaction) -> None:
    """An in-flight entry names the process that admitted it (``host``, ``pid``), so the next start
    can tell an entry a crash left from a live process's; a ledger row can say its tokens are unknown
    (``tokens_unknown``: a call booked after its process died) and which entry it was booked from
    (``ticket``), so a call that settles after all replaces its booking (``store/limits.py``)."""
    await script(tx, "ALTER TABLE inflight ADD COLUMN host TEXT NOT NULL DEFAULT '';"
                     " ALTER TABLE inflight ADD COLUMN pid INTEGER NOT NULL DEFAULT 0;"
                     " ALTER TABLE usage ADD COLUMN tokens_unknown INTEGER NOT NULL DEFAULT 0;"
                     " ALTER TABLE usage ADD COLUMN ticket INTEGER")
