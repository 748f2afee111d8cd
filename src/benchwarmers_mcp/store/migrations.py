"""Append-only, named migrations, applied on open and recorded in ``migrations``: one list for
every backend.

Never edit or reorder a migration that has shipped: add a new one at the end. Names are unique
and carry their concept (``m001_initial``, ``keys_001`` ...); a migration runs once, by name, on
each store (a SQLite file, a PostgreSQL database). Each is written once, in SQLite's words, and
made portable by ``store/portable.py`` (column types on PostgreSQL, triggers per backend).
"""

from __future__ import annotations

import time
from typing import TYPE_CHECKING

from benchwarmers_mcp.store.portable import MIGRATIONS, ddl, floor_of, migration, script, trigger

if TYPE_CHECKING:
    from benchwarmers_mcp.store.db import Transaction

__all__ = ["MIGRATIONS", "apply_migrations", "ddl"]


@migration
async def m001_initial(tx: Transaction) -> None:
    await script(
        tx,
        """
        CREATE TABLE endpoints (
            name TEXT PRIMARY KEY,
            base_url TEXT NOT NULL,
            api TEXT NOT NULL DEFAULT 'chat',
            kind TEXT NOT NULL DEFAULT 'provider',
            key_name TEXT,
            headers TEXT NOT NULL DEFAULT '{}',
            connection TEXT,
            created_at REAL NOT NULL
        );
        CREATE TABLE models (
            alias TEXT PRIMARY KEY,
            served TEXT NOT NULL,
            endpoint TEXT NOT NULL,
            family TEXT NOT NULL,
            role TEXT NOT NULL DEFAULT 'general',
            ad_hoc INTEGER NOT NULL DEFAULT 0,
            vision INTEGER,
            tools INTEGER,
            context_window INTEGER,
            max_output INTEGER,
            options TEXT NOT NULL DEFAULT '{}',
            last_used REAL,
            retired_at REAL,
            retired_why TEXT,
            created_at REAL NOT NULL
        );
        CREATE INDEX models_endpoint ON models (endpoint);
        CREATE TABLE collections (
            name TEXT PRIMARY KEY,
            description TEXT NOT NULL DEFAULT '',
            tags TEXT NOT NULL DEFAULT '[]',
            shape TEXT NOT NULL DEFAULT '',
            reply TEXT NOT NULL DEFAULT 'all',
            merger TEXT NOT NULL DEFAULT '',
            created_at REAL NOT NULL,
            updated_at REAL NOT NULL
        );
        CREATE TABLE collection_members (
            collection TEXT NOT NULL REFERENCES collections (name) ON DELETE CASCADE,
            alias TEXT NOT NULL,
            position INTEGER NOT NULL,
            PRIMARY KEY (collection, alias)
        );
        CREATE TABLE settings (
            name TEXT PRIMARY KEY,
            value TEXT NOT NULL
        );
        CREATE TABLE changes (
            id INTEGER PRIMARY KEY AUTOINCREMENT,
            at REAL NOT NULL,
            what TEXT NOT NULL,
            subject TEXT NOT NULL,
            detail TEXT NOT NULL DEFAULT '{}'
        );
        CREATE TABLE panels (
            id TEXT PRIMARY KEY,
            at REAL NOT NULL,
            collection TEXT NOT NULL,
            shape TEXT NOT NULL,
            shape_by TEXT NOT NULL,
            reply TEXT NOT NULL,
            key_name TEXT NOT NULL DEFAULT 'local',
            system TEXT,
            prompt TEXT NOT NULL,
            skipped TEXT NOT NULL DEFAULT '[]',
            note TEXT
        );
        CREATE INDEX panels_collection ON panels (collection, at);
        CREATE TABLE seats (
            call TEXT PRIMARY KEY,
            panel TEXT NOT NULL REFERENCES panels (id),
            seat TEXT NOT NULL,
            label TEXT NOT NULL,
            alias TEXT NOT NULL,
            status TEXT NOT NULL,
            seconds REAL NOT NULL,
            answer TEXT NOT NULL DEFAULT '',
            error TEXT NOT NULL DEFAULT '',
            tokens_in INTEGER NOT NULL DEFAULT 0,
            tokens_out INTEGER NOT NULL DEFAULT 0,
            at REAL NOT NULL
        );
        CREATE INDEX seats_panel ON seats (panel);
        CREATE INDEX seats_alias ON seats (alias, at);
        CREATE TABLE verdicts (
            id INTEGER PRIMARY KEY AUTOINCREMENT,
            call TEXT NOT NULL,
            at REAL NOT NULL,
            useful INTEGER NOT NULL,
            note TEXT NOT NULL DEFAULT '',
            real TEXT NOT NULL DEFAULT '[]',
            false_claims TEXT NOT NULL DEFAULT '[]',
            key_name TEXT NOT NULL DEFAULT 'local'
        );
        CREATE INDEX verdicts_call ON verdicts (call, id);
        CREATE TABLE usage (
            id INTEGER PRIMARY KEY AUTOINCREMENT,
            t REAL NOT NULL,
            alias TEXT NOT NULL,
            connection TEXT NOT NULL,
            endpoint TEXT NOT NULL,
            served TEXT NOT NULL,
            status TEXT NOT NULL,
            attempts INTEGER NOT NULL DEFAULT 1,
            tokens_in INTEGER NOT NULL DEFAULT 0,
            tokens_out INTEGER NOT NULL DEFAULT 0,
            reasoning INTEGER NOT NULL DEFAULT 0,
            seconds REAL NOT NULL DEFAULT 0,
            caller TEXT NOT NULL DEFAULT 'gateway',
            purpose TEXT NOT NULL DEFAULT '',
            key_name TEXT NOT NULL DEFAULT 'local'
        );
        CREATE INDEX usage_t ON usage (t);
        CREATE INDEX usage_connection ON usage (connection, t)
        """,
    )


async def apply_migrations(tx: Transaction) -> list[str]:
    await tx.execute(ddl("CREATE TABLE IF NOT EXISTS migrations (name TEXT PRIMARY KEY, applied_at REAL NOT NULL)",
                         tx.dialect))
    done = {row[0] for row in await tx.fetchall("SELECT name FROM migrations")}
    applied = []
    for name, fn in MIGRATIONS:
        if name in done:
            continue
        await fn(tx)
        await tx.execute("INSERT INTO migrations (name, applied_at) VALUES (?, ?)", (name, time.time()))
        applied.append(name)
    return applied


@migration
async def reminders_001(tx: Transaction) -> None:
    """Seats a session was reminded to judge (the Stop hook reminds once per seat per session)."""
    await script(
        tx,
        """
        CREATE TABLE reminders (
            session TEXT NOT NULL,
            call TEXT NOT NULL,
            at REAL NOT NULL,
            PRIMARY KEY (session, call)
        );
        CREATE INDEX reminders_at ON reminders (at)
        """,
    )


@migration
async def routes_001(tx: Transaction) -> None:
    """Route mode: sticky conversations, one call id per member per conversation, a row per turn."""
    await script(
        tx,
        """
        CREATE TABLE route_conversations (
            id TEXT PRIMARY KEY,
            sticky TEXT NOT NULL,
            collection TEXT NOT NULL,
            key_name TEXT NOT NULL DEFAULT 'local',
            alias TEXT,
            turns INTEGER NOT NULL DEFAULT 0,
            started_at REAL NOT NULL,
            last_at REAL NOT NULL
        );
        CREATE INDEX route_conversations_sticky ON route_conversations (sticky, last_at);
        CREATE TABLE route_calls (
            call TEXT PRIMARY KEY,
            conversation TEXT NOT NULL,
            alias TEXT NOT NULL,
            collection TEXT NOT NULL,
            n INTEGER NOT NULL,
            at REAL NOT NULL
        );
        CREATE UNIQUE INDEX route_calls_member ON route_calls (conversation, alias);
        CREATE INDEX route_calls_alias ON route_calls (alias);
        CREATE TABLE route_turns (
            id INTEGER PRIMARY KEY AUTOINCREMENT,
            conversation TEXT NOT NULL,
            turn INTEGER NOT NULL,
            call TEXT,
            alias TEXT,
            status TEXT NOT NULL,
            seconds REAL NOT NULL,
            first_token_s REAL,
            tool_calls INTEGER NOT NULL DEFAULT 0,
            finish TEXT,
            tokens_in INTEGER NOT NULL DEFAULT 0,
            tokens_out INTEGER NOT NULL DEFAULT 0,
            reasoning INTEGER NOT NULL DEFAULT 0,
            tried TEXT NOT NULL DEFAULT '[]',
            error TEXT NOT NULL DEFAULT '',
            key_name TEXT NOT NULL DEFAULT 'local',
            at REAL NOT NULL
        );
        CREATE INDEX route_turns_conversation ON route_turns (conversation, turn)
        """,
    )


@migration
async def keys_001(tx: Transaction) -> None:
    """Gateway keys (only the SHA-256 and a 4-character hint) and their shared rpm window."""
    await script(
        tx,
        """
        CREATE TABLE gateway_keys (
            name TEXT PRIMARY KEY,
            sha256 TEXT NOT NULL,
            hint TEXT NOT NULL,
            collections TEXT,
            rpm INTEGER,
            created REAL NOT NULL,
            last_used REAL
        );
        CREATE TABLE key_hits (
            key_name TEXT NOT NULL,
            at REAL NOT NULL
        );
        CREATE INDEX key_hits_key ON key_hits (key_name, at)
        """,
    )


@migration
async def limits_001(tx: Transaction) -> None:
    """Rate limits shared by every process: user/learned limits, reported quota windows, calls in
    flight, model rests and strikes, connection pauses, alerts; and the ledger by model."""
    await script(
        tx,
        """
        CREATE TABLE user_limits (
            scope TEXT NOT NULL,
            subject TEXT NOT NULL,
            name TEXT NOT NULL,
            source TEXT NOT NULL DEFAULT 'user',
            value INTEGER NOT NULL,
            updated_at REAL NOT NULL,
            PRIMARY KEY (scope, subject, name, source)
        );
        CREATE TABLE quotas (
            connection TEXT NOT NULL,
            alias TEXT NOT NULL DEFAULT '',
            metric TEXT NOT NULL,
            span TEXT NOT NULL DEFAULT '',
            lim INTEGER,
            remaining INTEGER,
            reset_at REAL,
            source TEXT NOT NULL DEFAULT 'headers',
            observed_at REAL NOT NULL,
            PRIMARY KEY (connection, alias, metric, span)
        );
        CREATE TABLE inflight (
            id INTEGER PRIMARY KEY AUTOINCREMENT,
            connection TEXT NOT NULL,
            alias TEXT NOT NULL,
            tokens INTEGER NOT NULL DEFAULT 0,
            started REAL NOT NULL,
            expires REAL NOT NULL
        );
        CREATE INDEX inflight_connection ON inflight (connection, started);
        CREATE TABLE model_states (
            alias TEXT PRIMARY KEY,
            connection TEXT NOT NULL,
            rest_until REAL,
            rest_why TEXT,
            strikes INTEGER NOT NULL DEFAULT 0,
            pending_retire_at REAL,
            pending_why TEXT,
            updated_at REAL NOT NULL
        );
        CREATE TABLE connection_states (
            connection TEXT PRIMARY KEY,
            paused_until REAL,
            paused_why TEXT,
            updated_at REAL NOT NULL
        );
        CREATE TABLE alerts (
            id INTEGER PRIMARY KEY AUTOINCREMENT,
            at REAL NOT NULL,
            kind TEXT NOT NULL,
            subject TEXT NOT NULL,
            message TEXT NOT NULL,
            cleared_at REAL
        );
        CREATE INDEX alerts_open ON alerts (kind, subject, cleared_at);
        CREATE INDEX usage_alias ON usage (alias, t)
        """,
    )


@migration
async def seats_002_touch_model(tx: Transaction) -> None:
    """A seat's row carries its model's last use with it: one statement per seat, not two."""
    await trigger(tx, "seats_touch_model", "seats",
                   "UPDATE models SET last_used = NEW.at"
                   " WHERE alias = NEW.alias AND (last_used IS NULL OR last_used < NEW.at);")


@migration
async def catalog_001_facts(tx: Transaction) -> None:
    """Model facts with their sources, the catalog's refreshed feeds, first-seen times, candidate
    dismissals. The facts already on model rows were set by the user: they become the user's."""
    await script(
        tx,
        """
        CREATE TABLE model_facts (
            alias TEXT NOT NULL,
            fact TEXT NOT NULL,
            source TEXT NOT NULL,
            value TEXT NOT NULL,
            detail TEXT NOT NULL DEFAULT '',
            entry TEXT NOT NULL DEFAULT '',
            evidence TEXT NOT NULL DEFAULT '',
            at REAL NOT NULL,
            PRIMARY KEY (alias, fact, source)
        );
        CREATE INDEX model_facts_entry ON model_facts (entry);
        CREATE TABLE catalog_feeds (
            source TEXT PRIMARY KEY,
            body TEXT,
            entries INTEGER NOT NULL DEFAULT 0,
            fetched_at REAL,
            tried_at REAL,
            error TEXT NOT NULL DEFAULT '',
            url TEXT NOT NULL DEFAULT ''
        );
        CREATE TABLE catalog_seen (
            entry TEXT PRIMARY KEY,
            first_seen REAL NOT NULL
        );
        CREATE TABLE catalog_state (
            name TEXT PRIMARY KEY,
            value TEXT NOT NULL
        );
        CREATE TABLE candidate_dismissals (
            endpoint TEXT NOT NULL,
            served TEXT NOT NULL,
            at REAL NOT NULL,
            PRIMARY KEY (endpoint, served)
        )
        """,
    )
    for column in ("context_window", "max_output", "tools", "vision"):
        value = "CASE WHEN {0} = 0 THEN 'false' ELSE 'true' END" if column in ("tools", "vision") else "CAST({0} AS TEXT)"
        await tx.execute(
            f"INSERT INTO model_facts (alias, fact, source, value, detail, at) SELECT alias, '{column}', 'user',"
            f" {value.format(column)}, 'set by the user', created_at FROM models WHERE {column} IS NOT NULL")


@migration
async def suite_001_runs_and_scores(tx: Transaction) -> None:
    """The review suite: repositories to plant in, what was planted, runs and their planned items,
    every answer with its score, one lease per connection (one suite call at a time), settings."""
    await script(
        tx,
        """
        CREATE TABLE suite_repos (
            name TEXT PRIMARY KEY,
            path TEXT NOT NULL,
            added_at REAL NOT NULL
        );
        CREATE TABLE suite_planted (
            repo TEXT NOT NULL,
            unit TEXT NOT NULL,
            task TEXT NOT NULL,
            at REAL NOT NULL,
            PRIMARY KEY (repo, unit)
        );
        CREATE TABLE suite_runs (
            id INTEGER PRIMARY KEY AUTOINCREMENT,
            created_at REAL NOT NULL,
            origin TEXT NOT NULL DEFAULT 'cli',
            request TEXT NOT NULL DEFAULT '{}',
            policy TEXT NOT NULL DEFAULT '{}',
            state TEXT NOT NULL DEFAULT 'running',
            note TEXT NOT NULL DEFAULT '',
            finished_at REAL
        );
        CREATE INDEX suite_runs_state ON suite_runs (state, id);
        CREATE TABLE suite_items (
            id INTEGER PRIMARY KEY AUTOINCREMENT,
            run INTEGER NOT NULL REFERENCES suite_runs (id),
            seq INTEGER NOT NULL,
            alias TEXT NOT NULL,
            connection TEXT NOT NULL,
            task TEXT NOT NULL,
            state TEXT NOT NULL DEFAULT 'pending',
            attempts INTEGER NOT NULL DEFAULT 0,
            holder TEXT,
            held_until REAL,
            rest_until REAL,
            last_error TEXT NOT NULL DEFAULT '',
            answer INTEGER,
            updated_at REAL NOT NULL
        );
        CREATE INDEX suite_items_run ON suite_items (run, state, seq);
        CREATE TABLE suite_answers (
            id INTEGER PRIMARY KEY AUTOINCREMENT,
            item INTEGER,
            run INTEGER,
            alias TEXT NOT NULL,
            task TEXT NOT NULL,
            at REAL NOT NULL,
            status TEXT NOT NULL,
            seconds REAL NOT NULL DEFAULT 0,
            answer TEXT NOT NULL DEFAULT '',
            error TEXT NOT NULL DEFAULT '',
            scored INTEGER NOT NULL,
            outcome TEXT,
            reason TEXT NOT NULL DEFAULT '',
            expects TEXT NOT NULL DEFAULT '',
            found INTEGER NOT NULL DEFAULT 0,
            invented INTEGER NOT NULL DEFAULT 0,
            invented_claims TEXT NOT NULL DEFAULT '[]',
            chances INTEGER NOT NULL DEFAULT 0,
            wrong INTEGER NOT NULL DEFAULT 0,
            named_line INTEGER,
            prompt_sha TEXT NOT NULL DEFAULT '',
            tokens_in INTEGER NOT NULL DEFAULT 0,
            tokens_out INTEGER NOT NULL DEFAULT 0
        );
        CREATE INDEX suite_answers_alias ON suite_answers (alias, at);
        CREATE INDEX suite_answers_task ON suite_answers (task, alias);
        CREATE TABLE suite_leases (
            connection TEXT PRIMARY KEY,
            holder TEXT,
            until REAL NOT NULL
        );
        CREATE TABLE suite_config (
            name TEXT PRIMARY KEY,
            value TEXT NOT NULL
        )
        """,
    )


@migration
async def suite_002_item_rests(tx: Transaction) -> None:
    """How many times an item was given back for a rate limit: a run gives up on a model that stays
    rate limited instead of resting for ever."""
    await tx.execute(ddl("ALTER TABLE suite_items ADD COLUMN rests INTEGER NOT NULL DEFAULT 0", tx.dialect))


EVENT_TRIGGERS = {
    # table: (kind, subject, ref), each from the NEW row; the trigger runs inside the INSERT's own
    # statement, so the event commits (or rolls back) with the row it announces
    "seats": ("seat", "NEW.call", "NEW.panel"),
    "panels": ("panel", "NEW.id", "NEW.collection"),
    "verdicts": ("verdict", "NEW.call", "''"),
    "changes": ("change", "NEW.subject", "NEW.what"),
    "alerts": ("alert", "NEW.subject", "NEW.kind"),
    "route_turns": ("route", "NEW.conversation", "COALESCE(NEW.alias, '')"),
}


@migration
async def web_001_events(tx: Transaction) -> None:
    """The live feed: an append-only ``events`` row for each seat, panel, verdict, change, alert and
    route turn, written by a trigger in the same statement as the row it announces. Every process
    on the data folder tails it (store/events.py) and pushes it to the dashboard. No index beyond
    the id and no AUTOINCREMENT (its counter is one more page written each time): ids still never
    repeat, as pruning always keeps the newest row."""
    await script(
        tx,
        """
        CREATE TABLE events (
            id INTEGER PRIMARY KEY,
            at REAL NOT NULL,
            kind TEXT NOT NULL,
            subject TEXT NOT NULL,
            ref TEXT NOT NULL DEFAULT ''
        )
        """,
    )
    for table, (kind, subject, ref) in EVENT_TRIGGERS.items():
        await trigger(tx, f"events_{table}", table,
                       f"INSERT INTO events (at, kind, subject, ref) VALUES (NEW.at, '{kind}', {subject}, {ref});")


@migration
async def health_001_probes(tx: Transaction) -> None:
    """Health: probe history, endpoint listings as snapshotted, the parameters a model's API refused
    to a probe, retirements (with the collections each left, so a restore puts them back)."""
    await script(
        tx,
        """
        CREATE TABLE probes (
            id INTEGER PRIMARY KEY AUTOINCREMENT,
            at REAL NOT NULL,
            alias TEXT NOT NULL,
            connection TEXT NOT NULL,
            kind TEXT NOT NULL,
            prompt TEXT NOT NULL,
            n INTEGER NOT NULL,
            answered INTEGER NOT NULL DEFAULT 0,
            refused INTEGER NOT NULL DEFAULT 0,
            errors INTEGER NOT NULL DEFAULT 0,
            timeouts INTEGER NOT NULL DEFAULT 0,
            failure TEXT,
            detail TEXT NOT NULL DEFAULT '',
            p50_s REAL,
            p95_s REAL,
            min_s REAL,
            max_s REAL,
            chars_per_s REAL,
            tokens_per_s REAL,
            tokens_in INTEGER NOT NULL DEFAULT 0,
            tokens_out INTEGER NOT NULL DEFAULT 0,
            reasoning INTEGER NOT NULL DEFAULT 0,
            learned TEXT NOT NULL DEFAULT '{}'
        );
        CREATE INDEX probes_alias ON probes (alias, at);
        CREATE INDEX probes_at ON probes (at);
        CREATE TABLE listings (
            id INTEGER PRIMARY KEY AUTOINCREMENT,
            endpoint TEXT NOT NULL,
            at REAL NOT NULL,
            ok INTEGER NOT NULL,
            served TEXT NOT NULL DEFAULT '[]',
            error TEXT NOT NULL DEFAULT ''
        );
        CREATE INDEX listings_endpoint ON listings (endpoint, at);
        CREATE TABLE probe_quirks (
            alias TEXT PRIMARY KEY,
            quirks TEXT NOT NULL,
            at REAL NOT NULL
        );
        CREATE TABLE retirements (
            id INTEGER PRIMARY KEY AUTOINCREMENT,
            alias TEXT NOT NULL,
            at REAL NOT NULL,
            why TEXT NOT NULL,
            by TEXT NOT NULL DEFAULT 'user',
            rule TEXT,
            collections TEXT NOT NULL DEFAULT '[]',
            evidence TEXT NOT NULL DEFAULT '{}',
            restored_at REAL,
            restored_to TEXT
        );
        CREATE INDEX retirements_alias ON retirements (alias, at)
        """,
    )


@migration
async def health_002_alerts(tx: Transaction) -> None:
    """Alerts gain what to do about them, a refresh time, and a dismissal (kept open, not shown)."""
    await script(
        tx,
        """
        ALTER TABLE alerts ADD COLUMN detail TEXT NOT NULL DEFAULT '{}';
        ALTER TABLE alerts ADD COLUMN refreshed_at REAL;
        ALTER TABLE alerts ADD COLUMN dismissed_at REAL;
        ALTER TABLE alerts ADD COLUMN cleared_why TEXT
        """,
    )


@migration
async def health_003_scheduler(tx: Transaction) -> None:
    """The scheduler: leases (one runner per data folder), each job's state, every run logged."""
    await script(
        tx,
        """
        CREATE TABLE leases (
            name TEXT PRIMARY KEY,
            owner TEXT NOT NULL,
            acquired REAL NOT NULL,
            expires REAL NOT NULL
        );
        CREATE TABLE scheduler_jobs (
            job TEXT PRIMARY KEY,
            last_due REAL,
            running_run INTEGER,
            running_owner TEXT,
            heartbeat REAL
        );
        CREATE TABLE scheduler_runs (
            id INTEGER PRIMARY KEY AUTOINCREMENT,
            job TEXT NOT NULL,
            due REAL,
            at REAL NOT NULL,
            finished REAL,
            status TEXT NOT NULL,
            trigger TEXT NOT NULL DEFAULT 'schedule',
            note TEXT NOT NULL DEFAULT '',
            detail TEXT NOT NULL DEFAULT '{}',
            owner TEXT NOT NULL DEFAULT ''
        );
        CREATE INDEX scheduler_runs_job ON scheduler_runs (job, at)
        """,
    )


@migration
async def health_004_onboarding(tx: Transaction) -> None:
    """The onboarding queue: one row per model, its steps as they went; it survives a restart."""
    await script(
        tx,
        """
        CREATE TABLE onboarding (
            id INTEGER PRIMARY KEY AUTOINCREMENT,
            batch TEXT NOT NULL,
            served TEXT NOT NULL,
            endpoint TEXT NOT NULL,
            mode TEXT NOT NULL,
            alias TEXT,
            state TEXT NOT NULL,
            step INTEGER NOT NULL DEFAULT 0,
            log TEXT NOT NULL DEFAULT '[]',
            role TEXT,
            reason TEXT NOT NULL DEFAULT '',
            stop INTEGER NOT NULL DEFAULT 0,
            cleared INTEGER NOT NULL DEFAULT 0,
            created REAL NOT NULL,
            started REAL,
            finished REAL
        );
        CREATE INDEX onboarding_state ON onboarding (state, id)
        """,
    )


HEALTH_EVENT_TRIGGERS = {
    # (table, INSERT or UPDATE): (kind, subject, ref, at), each from the NEW row. An alert is often
    # refreshed, cleared or dismissed by an UPDATE (a job, a restore, a resume, the user), which the
    # insert trigger never saw: the dashboard's "Action needed" hears those too.
    ("alerts", "UPDATE"): ("alert", "NEW.subject", "NEW.kind",
                           "CASE WHEN NEW.cleared_at IS NOT NULL THEN NEW.cleared_at"
                           " WHEN NEW.dismissed_at IS NOT NULL AND (NEW.refreshed_at IS NULL"
                           " OR NEW.dismissed_at >= NEW.refreshed_at) THEN NEW.dismissed_at"
                           " WHEN NEW.refreshed_at IS NOT NULL THEN NEW.refreshed_at ELSE NEW.at END"),
    ("probes", "INSERT"): ("probe", "NEW.alias", "NEW.kind", "NEW.at"),
    ("onboarding", "INSERT"): ("onboarding", "CAST(NEW.id AS TEXT)", "NEW.state", "NEW.created"),
    ("onboarding", "UPDATE"): ("onboarding", "CAST(NEW.id AS TEXT)", "NEW.state",
                               "COALESCE(NEW.finished, NEW.started, NEW.created)"),
    ("scheduler_runs", "INSERT"): ("scheduler", "NEW.job", "NEW.status", "COALESCE(NEW.finished, NEW.at)"),
    ("scheduler_runs", "UPDATE"): ("scheduler", "NEW.job", "NEW.status", "COALESCE(NEW.finished, NEW.at)"),
}


@migration
async def web_002_health_events(tx: Transaction) -> None:
    """The live feed hears health: an alert refreshed, cleared or dismissed (an UPDATE), a probe, an
    onboarding item queued or moved on a step, a scheduler run started or finished. Each event row
    is written by a trigger in the statement that changes the row, as in ``web_001_events``."""
    for (table, change), (kind, subject, ref, at) in HEALTH_EVENT_TRIGGERS.items():
        await trigger(tx, f"events_{table}_{change.lower()}", table,
                       f"INSERT INTO events (at, kind, subject, ref) VALUES ({at}, '{kind}', {subject}, {ref});",
                       change)


@migration
async def ratings_001_suggestions_and_shadows(tx: Transaction) -> None:
    """Learning: the suggestions a review raised (who to promote or bench) and what became of each;
    shadow answers (another member answering a route turn in the background, for a later verdict)."""
    await script(
        tx,
        """
        CREATE TABLE suggestions (
            id INTEGER PRIMARY KEY AUTOINCREMENT,
            collection TEXT NOT NULL,
            kind TEXT NOT NULL,
            alias TEXT NOT NULL,
            replaces TEXT NOT NULL DEFAULT '',
            reason TEXT NOT NULL DEFAULT '',
            strength REAL NOT NULL DEFAULT 0,
            auto INTEGER NOT NULL DEFAULT 0,
            evidence TEXT NOT NULL DEFAULT '{}',
            state TEXT NOT NULL DEFAULT 'open',
            open_key TEXT UNIQUE,
            raised_at REAL NOT NULL,
            updated_at REAL NOT NULL,
            decided_at REAL,
            decided_by TEXT
        );
        CREATE INDEX suggestions_state ON suggestions (state, collection);
        CREATE TABLE shadow_calls (
            call TEXT PRIMARY KEY,
            conversation TEXT NOT NULL,
            turn INTEGER NOT NULL,
            alias TEXT NOT NULL,
            collection TEXT NOT NULL,
            status TEXT NOT NULL,
            seconds REAL NOT NULL DEFAULT 0,
            answer TEXT NOT NULL DEFAULT '',
            tool_calls TEXT NOT NULL DEFAULT '[]',
            error TEXT NOT NULL DEFAULT '',
            tokens_in INTEGER NOT NULL DEFAULT 0,
            tokens_out INTEGER NOT NULL DEFAULT 0,
            at REAL NOT NULL
        );
        CREATE INDEX shadow_calls_conversation ON shadow_calls (conversation, turn)
        """,
    )


@migration
async def replicas_001(tx: Transaction) -> None:
    """The servers on this store, each with when it was last seen (``store/replicas.py``)."""
    await script(
        tx,
        """
        CREATE TABLE replicas (
            id TEXT PRIMARY KEY,
            host TEXT NOT NULL,
            pid INTEGER NOT NULL,
            started REAL NOT NULL,
            seen REAL NOT NULL
        );
        CREATE INDEX replicas_seen ON replicas (seen)
        """,
    )


@migration
async def web_ratings_001_suggestion_events(tx: Transaction) -> None:
    """The live feed hears suggestions: one raised, refreshed, withdrawn or accepted (a review writes
    them after the verdict's own commit, so the verdict's event alone could come too early)."""
    for change, at in (("INSERT", "NEW.raised_at"), ("UPDATE", "COALESCE(NEW.decided_at, NEW.updated_at)")):
        await trigger(tx, f"events_suggestions_{change.lower()}", "suggestions",
                       f"INSERT INTO events (at, kind, subject, ref) VALUES ({at}, 'suggestion', NEW.collection,"
                       " NEW.state);", change)


_HEALTH_TALLIED = {"seats": "", "route_turns": " AND NEW.alias IS NOT NULL"}


@migration
async def ratings_002_health_tally(tx: Transaction) -> None:
    """Health evidence as it happens: per model and day, the calls it answered and those that failed
    (an error or a timeout), added to by a trigger in the statement that writes a seat or a route
    turn, and filled here from the calls already made. A rating read every call ever made before
    (a third of a route turn's CPU after a few thousand turns, and growing with the history); now it
    reads a model's days."""
    await script(
        tx,
        """
        CREATE TABLE health_tally (
            alias TEXT NOT NULL,
            day INTEGER NOT NULL,
            ok INTEGER NOT NULL DEFAULT 0,
            failed INTEGER NOT NULL DEFAULT 0,
            PRIMARY KEY (alias, day)
        )
        """,
    )
    for table, only in _HEALTH_TALLIED.items():
        await trigger(tx, f"health_tally_{table}", table,
                       f"INSERT INTO health_tally (alias, day, ok, failed) SELECT NEW.alias, {floor_of('NEW.at / 86400', tx.dialect)},"
                       " CASE WHEN NEW.status = 'ok' THEN 1 ELSE 0 END, CASE WHEN NEW.status = 'ok' THEN 0 ELSE 1 END"
                       f" WHERE NEW.status IN ('ok', 'error', 'timeout'){only}"
                       " ON CONFLICT (alias, day) DO UPDATE SET ok = health_tally.ok + excluded.ok,"
                       " failed = health_tally.failed + excluded.failed;")
    day = floor_of("at / 86400", tx.dialect)
    calls = " UNION ALL ".join(
        f"SELECT alias, {day} AS day, CASE WHEN status = 'ok' THEN 1 ELSE 0 END AS ok FROM {table}"
        f" WHERE status IN ('ok', 'error', 'timeout'){only.replace('NEW.', '')}" for table, only in _HEALTH_TALLIED.items())
    await tx.execute("INSERT INTO health_tally (alias, day, ok, failed)"
                     f" SELECT alias, day, SUM(ok), COUNT(*) - SUM(ok) FROM ({calls}) e GROUP BY alias, day")


# The migrations after these, in a module of their own (this one is long): importing it here puts
# them after every migration above, for every backend.
from benchwarmers_mcp.store import migrations_bench  # noqa: E402,F401
