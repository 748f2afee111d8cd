"""The store: every row the user owns, and the only package that holds SQL.

``db.py`` is the one interface the rest of the store uses, with two backends: ``sqlite.py`` (one
file in the data folder, WAL, one writer per process: the default) and ``postgres.py`` (asyncpg, a
pool per process, for several replicas on one shared database, chosen by
``BENCHWARMERS_DATABASE_URL=postgresql://...``); ``migrations.py`` holds the append-only schema, one
list for both, continued by ``migrations_bench.py``; one module
per concept holds that concept's queries:

    endpoints  models  collections  changes (the edit log)  calls (panels and seats)
    verdicts  reminders  routes (route-mode conversations, calls, turns)  ledger (upstream usage)
    limits (rate limits, quotas, rests, pauses, alerts)  keys (gateway keys)  summary (status counts)
    facts (each model's facts by source)  catalog (refreshed feeds, first sightings, dismissals)
    suite (the review suite: repositories, runs and their items, answers with scores, leases)
    health (probes, listings snapshotted, probe quirks, the retire rules' evidence)  alerts ("action
    needed": raised, refreshed, dismissed, cleared)  scheduler (leases, job states, every run)
    onboarding (the queue of models to bring on)  ratings (the evidence ratings are made of, from
    verdicts, the suite and ``health_tally``, suggestions, learning settings, shadow answers)
    health_evidence (``health_tally`` summed per model for a half-life, kept between reads)
    events (the live feed)  logs, stats (what the dashboard shows)  preferences (the default endpoint)
    config_version (configuration kept per process until any process changes it)  liveness (whether
    the store serves now, for ``/health``)

Code outside the store calls these modules' functions; it never writes SQL and never sees a row
factory, a cursor or the driver. Tests read records through the same functions.

What a backend implements (the whole of it; the store modules need nothing else):

    Database      open() / close() (also ``async with``), which applies the migrations; ``backend``
                  (its name and version, to show);
                  fetchall(sql, params) -> list[Row]; fetchone(...) -> Row | None; fetchval(...) -> Any;
                  write(sql, params) -> rows changed (one statement, committed on return);
                  record(sql, params): ``write`` for a record of what was done (a usage row, a
                  seat, a route turn), committed whole even when its task is cancelled meanwhile
                  (the base class shields ``write``; SQLite writes at once when its writer is free);
                  transaction() -> async context manager yielding a Transaction that commits
                  on exit and rolls back on any exception (cancellation included).
    Transaction   execute(sql, params) -> rows changed; insert(sql, params) -> the new row's
                  integer ``id``; executemany(sql, rows); fetchall / fetchone / fetchval.
    Row           by position and by column name, iterable over its values, ``dict(row)``.
    ReadOnly      ``Database.reader()``: a read-only connection of its own (``async with``), with
                  fetchall / fetchone / fetchval, that never waits on the writer and sees only
                  committed rows; a failed read raises ``StoreUnavailable`` (the live feed retries).

The SQL the modules send runs unchanged on both: ``?`` placeholders only (positional, never inside
a literal); upserts as ``INSERT ... ON CONFLICT (...) DO UPDATE SET col = excluded.col`` or ``DO
NOTHING``; ``COALESCE``, ``CASE``, ``EXISTS``, ``UNION [ALL]``, ``LIMIT ?``; yes/no columns are
INTEGER 0/1 and the store always passes ints to them; a parameter that only appears in a select
list is cast (``CAST(? AS DOUBLE PRECISION)``: asyncpg cannot infer its type). Where the backends
differ, each covers it in its own module:

- Placeholders: PostgreSQL rewrites ``?`` to ``$1, $2 ...`` (``postgres.rewrite``).
- One writer at a time, across every process and replica: SQLite's ``BEGIN IMMEDIATE``;
  PostgreSQL's ``BEGIN`` plus a transaction-level advisory lock (``pg_advisory_xact_lock``), taken
  before the first statement, so a read inside sees every commit made before it (READ COMMITTED).
  Several store functions rely on it (read-then-write without a race: ``keys.admit`` counts then
  inserts, the pacer's admission counts spends and in-flight calls then adds one,
  ``routes.claim_turn``, ``limits.raise_alert``, ``reminders.due``, the retried id draws of panels
  and conversations, ``suite.take_lease`` and ``suite.settle_item``, ``scheduler.take_lease`` and ``scheduler.claim``,
  ``alerts.put``). A write is acknowledged only
  after its commit on both.
- Rows changed: SQLite's cursor count; PostgreSQL's command status (``UPDATE 3``): neither
  counts the rows triggers add. Callers only test it for zero or add it up.
- New ids: ``insert()`` reads SQLite's ``lastrowid``; PostgreSQL appends ``RETURNING id``.
- ``write()`` is a one-statement writer transaction on both (so ids are given out in commit order:
  the live feed tails ``events`` by id). SQLite has one writer connection per process, and reads on
  ``Database`` use a reader connection of their own that sees only committed rows; PostgreSQL reads
  on any pooled connection. On both, a read from the task holding a transaction runs inside it
  (PostgreSQL: a write too).
- Where statements run: SQLite runs them on the event loop, except a read over its CPU budget, a
  busy database and ``executemany``, which go to a thread (``sqlite.py``); asyncpg needs none of it.
- Schema: migrations are written in SQLite's DDL and ``portable.ddl`` maps the column types for
  PostgreSQL (``REAL`` is ``DOUBLE PRECISION`` there: PostgreSQL's REAL is 4 bytes, a timestamp
  would lose minutes); a trigger is a PL/pgSQL function there (``portable.trigger``); rounding
  down is ``portable.floor_of`` (PostgreSQL's ``CAST`` rounds to nearest). ``Reader.dialect`` names
  the backend for the rare read that needs it.
- ``Database.memo``: what a read function derived and may answer again while what it came from is
  unchanged, checked against the store on every read (``ratings.evidence`` keeps verdict evidence
  until any process adds a verdict; ``config_version`` keeps models, endpoints, collections,
  settings and a gate's endpoint until a trigger-written stamp changes); per process, never a record.
- ``Database.reader()``: SQLite opens the file again with ``mode=ro``; PostgreSQL takes a connection
  of its own outside the pool (``default_transaction_read_only``) and autocommits each read.
- Text: SQLite keeps a U+0000 in a string; PostgreSQL's ``text`` refuses it, so ``postgres.py`` hands
  a string parameter that holds one to the driver as ``portable.stored_text`` (an injective
  encoding: a C-speed check per string parameter, nothing for the rest), and a store module reads
  free text back (answers, errors, prompts, notes, a provider's words) through
  ``portable.read_text(value, db.dialect)``. Names and ids hold no control character (the faces
  refuse one: ``names.no_control``), so they are read as they are.
- Failures of the store itself (unreachable, a dropped connection, a full disk, an I/O error, a
  refused write) are ``db.StoreUnavailable`` (a 503), mapped at each backend's one error boundary,
  its message with any password in the URL masked (``db.mask_url``); the backend keeps the last
  one (``Database.failure``) for ``/health`` (``liveness.py``) until a write probe goes through.
"""

from benchwarmers_mcp.store.db import Database, Reader, ReadOnly, Row, StoreUnavailable, Transaction

__all__ = ["Database", "ReadOnly", "Reader", "Row", "StoreUnavailable", "Transaction"]
