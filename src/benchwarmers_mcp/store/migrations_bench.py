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


@migration
async def judge_001_sources_texts_retention(tx: Transaction) -> None:
    """Judging every panel from anywhere (issue 30):

    - who asked: ``source`` (``dashboard``, ``cli``, ``gateway``, ``mcp``) and ``client`` (the caller's
      product, from its User-Agent or the MCP client's ``clientInfo``) on panels and route
      conversations; rows from before get ``dashboard`` where their key says so, else '' (unknown);
    - a route turn's texts, so a turn can be judged later on its own call id (``turn_call``,
      ``<conversation>.t<turn>``): the last user message (``prompt``) and the answer;
    - ``pruned_at``: when the retention pruned a panel's texts (its prompt, system text, and its
      seats' answers and errors: on the panel and on each seat), a route turn's or a shadow
      answer's; NULL while they are kept."""
    await script(tx, """
        ALTER TABLE panels ADD COLUMN source TEXT NOT NULL DEFAULT '';
        ALTER TABLE panels ADD COLUMN client TEXT NOT NULL DEFAULT '';
        ALTER TABLE panels ADD COLUMN pruned_at REAL;
        ALTER TABLE seats ADD COLUMN pruned_at REAL;
        ALTER TABLE route_conversations ADD COLUMN source TEXT NOT NULL DEFAULT '';
        ALTER TABLE route_conversations ADD COLUMN client TEXT NOT NULL DEFAULT '';
        ALTER TABLE route_turns ADD COLUMN turn_call TEXT;
        ALTER TABLE route_turns ADD COLUMN prompt TEXT NOT NULL DEFAULT '';
        ALTER TABLE route_turns ADD COLUMN answer TEXT NOT NULL DEFAULT '';
        ALTER TABLE route_turns ADD COLUMN pruned_at REAL;
        ALTER TABLE shadow_calls ADD COLUMN pruned_at REAL;
        CREATE INDEX panels_at ON panels (at);
        CREATE INDEX route_turns_turn_call ON route_turns (turn_call)
        """)
    await tx.execute("UPDATE panels SET source = 'dashboard' WHERE key_name = 'dashboard'")


@migration
async def judge_002_claim_marks_and_owed(tx: Transaction) -> None:
    """Claims judged once (issue 30):

    - ``verdicts.useful`` nullable: a line that only marks claims (real or false) on a seat nobody
      judged useful or not yet. SQLite cannot drop a NOT NULL, so there the table is rebuilt
      (same ids, same sequence, its index and its live-feed trigger made again);
    - ``seats.judged``: whether the seat's latest verdict line says useful or not, set by a trigger
      in the statement that writes each line (filled here from the lines before), so the seats
      owed a verdict are read from a partial index (``seats_owed``, the terms of
      ``verdicts.owed``) instead of a probe of the verdicts per seat (the inbox's count is on every
      page: 1.1 s over 100,000 seats that way, 8 ms this way)."""
    await _verdicts_nullable(tx)
    await script(tx, "ALTER TABLE seats ADD COLUMN judged INTEGER NOT NULL DEFAULT 0")
    await trigger(tx, "seats_judged", "verdicts",
                  "UPDATE seats SET judged = CASE WHEN NEW.useful IS NULL THEN 0 ELSE 1 END WHERE call = NEW.call;")
    await script(tx, """
        UPDATE seats SET judged = 1 WHERE call IN (SELECT v.call FROM verdicts v WHERE v.useful IS NOT NULL
            AND v.id = (SELECT MAX(l.id) FROM verdicts l WHERE l.call = v.call));
        CREATE INDEX seats_owed ON seats (panel) WHERE status IN ('ok', 'empty') AND judged = 0 AND pruned_at IS NULL
        """)


async def _verdicts_nullable(tx: Transaction) -> None:
    """``verdicts.useful`` may be NULL: PostgreSQL drops the NOT NULL; SQLite rebuilds the table."""
    if tx.dialect == "postgresql":
        await tx.execute("ALTER TABLE verdicts ALTER COLUMN useful DROP NOT NULL")
        return
    await script(tx, """
        CREATE TABLE verdicts_new (
            id INTEGER PRIMARY KEY AUTOINCREMENT,
            call TEXT NOT NULL,
            at REAL NOT NULL,
            useful INTEGER,
            note TEXT NOT NULL DEFAULT '',
            real TEXT NOT NULL DEFAULT '[]',
            false_claims TEXT NOT NULL DEFAULT '[]',
            key_name TEXT NOT NULL DEFAULT 'local',
            scope TEXT
        );
        INSERT INTO verdicts_new (id, call, at, useful, note, real, false_claims, key_name, scope)
            SELECT id, call, at, useful, note, real, false_claims, key_name, scope FROM verdicts;
        DELETE FROM sqlite_sequence WHERE name = 'verdicts_new';
        INSERT INTO sqlite_sequence (name, seq) SELECT 'verdicts_new', seq FROM sqlite_sequence WHERE name = 'verdicts';
        DROP TABLE verdicts;
        ALTER TABLE verdicts_new RENAME TO verdicts;
        CREATE INDEX verdicts_call ON verdicts (call, id)
        """)
    kind, subject, ref = _before.EVENT_TRIGGERS["verdicts"]  # as web_001_events made it
    await trigger(tx, "events_verdicts", "verdicts",
                  f"INSERT INTO events (at, kind, subject, ref) VALUES (NEW.at, '{kind}', {subject}, {ref});")


@migration
async def signins_001_tables(tx: Transaction) -> None:
    """Sign-ins with a provider (``store/signins.py``): one row per signed-in endpoint (its preset,
    flow and client id, when its token expires and was renewed, whether it ended), and one per
    sign-in flow started (its status, the code a device flow shows, its state as a SHA-256, which
    server holds its secrets). No token, refresh token, verifier or device code is ever a column:
    they are in the keys file or in the memory of the server running the flow."""
    await script(tx, """
        CREATE TABLE signins (
            endpoint TEXT PRIMARY KEY,
            preset TEXT NOT NULL,
            flow TEXT NOT NULL,
            client_id TEXT,
            signed_in_at REAL NOT NULL,
            expires_at REAL,
            renewed_at REAL,
            renewable INTEGER NOT NULL DEFAULT 0,
            ended_at REAL,
            ended_why TEXT
        );
        CREATE TABLE signin_flows (
            id TEXT PRIMARY KEY,
            preset TEXT NOT NULL,
            flow TEXT NOT NULL,
            endpoint TEXT NOT NULL,
            status TEXT NOT NULL,
            error TEXT,
            created_at REAL NOT NULL,
            expires_at REAL NOT NULL,
            finished_at REAL,
            owner TEXT,
            state_hash TEXT,
            user_code TEXT,
            verification_uri TEXT,
            verification_uri_complete TEXT
        );
        CREATE UNIQUE INDEX signin_flows_state ON signin_flows (state_hash);
        CREATE INDEX signin_flows_created ON signin_flows (created_at)
    """)


@migration
async def hubs_001_tables(tx: Transaction) -> None:
    """Hubs (``store/hubs.py``): which hub an endpoint is (and its admin key's *name*), the
    endpoints made for a hub's upstream connections, and the hub's last listing of the upstream
    behind each model it serves (so a model's limits are its real upstream's, and a prefix the hub
    renames is followed rather than retired)."""
    await script(tx, """
        CREATE TABLE hub_endpoints (
            endpoint TEXT PRIMARY KEY,
            hub TEXT NOT NULL,
            admin_key TEXT,
            parent TEXT,
            upstream TEXT
        );
        CREATE INDEX hub_endpoints_parent ON hub_endpoints (parent);
        CREATE TABLE hub_models (
            endpoint TEXT NOT NULL,
            served TEXT NOT NULL,
            connection TEXT NOT NULL,
            upstream_model TEXT NOT NULL,
            seen_at REAL NOT NULL,
            PRIMARY KEY (endpoint, served)
        )
    """)
