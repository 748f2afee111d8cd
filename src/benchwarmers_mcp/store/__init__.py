"""The store: every row the user owns, and the only package that holds SQL.

``db.py`` is the one interface the rest of the store uses, today backed by one SQLite database in
WAL mode with one writer per process; ``migrations.py`` holds the append-only schema; one module
per concept holds that concept's queries:

    endpoints  models  collections  changes (the edit log)  calls (panels and seats)
    verdicts  reminders  routes (route-mode conversations, calls, turns)  ledger (upstream usage)
    limits (rate limits, quotas, rests, pauses, alerts)  keys (gateway keys)  summary (status counts)
    facts (each model's facts by source)  catalog (refreshed feeds, first sightings, dismissals)
    suite (the review suite: repositories, runs and their items, answers with scores, leases)
    health (probes, listings snapshotted, probe quirks, the retire rules' evidence)  alerts ("action
    needed": raised, refreshed, dismissed, cleared)  scheduler (leases, job states, every run)
    onboarding (the queue of models to bring on)
    events (the live feed)  logs, stats (what the dashboard shows)  preferences (the default endpoint)

Code outside the store calls these modules' functions; it never writes SQL and never sees a row
factory, a cursor or the driver. Tests read records through the same functions.

What a backend implements (the whole of it; the store modules need nothing else):

    Database      open() / close() (also ``async with``), which applies the migrations; ``backend``
                  (its name and version, to show);
                  fetchall(sql, params) -> list[Row]; fetchone(...) -> Row | None; fetchval(...) -> Any;
                  write(sql, params) -> rows changed (one statement, committed on return);
                  transaction() -> async context manager yielding a Transaction that commits
                  on exit and rolls back on any exception (cancellation included).
    Transaction   execute(sql, params) -> rows changed; insert(sql, params) -> the new row's
                  integer ``id``; executemany(sql, rows); fetchall / fetchone / fetchval.
    Row           by position and by column name, iterable over its values, ``dict(row)``.
    ReadOnly      ``Database.reader()``: a read-only connection of its own (``async with``), with
                  fetchall / fetchone / fetchval, that never waits on the writer and sees only
                  committed rows; a failed read raises ``StoreUnavailable`` (the live feed retries).

The SQL the modules send is written to run unchanged on PostgreSQL: ``?`` placeholders only
(positional, never inside a literal); upserts as ``INSERT ... ON CONFLICT (...) DO UPDATE SET
col = excluded.col`` or ``DO NOTHING``; ``COALESCE``, ``CASE``, ``EXISTS``, ``UNION [ALL]``,
``LIMIT ?``; yes/no columns are INTEGER 0/1 and the store always passes ints to them. What a
PostgreSQL backend must still cover, all of it inside ``db.py`` or its own migrations:

- Placeholders: rewrite ``?`` to the driver's style (``$1, $2 ...`` for asyncpg, ``%s`` for psycopg).
- One writer at a time: ``transaction()`` opens ``BEGIN IMMEDIATE``, so every writer of every
  process is serialised, and several store functions rely on it (read-then-write without a race:
  ``keys.admit`` counts then inserts, ``routes.claim_turn`` finds then bumps a conversation,
  ``limits.raise_alert`` checks then inserts, ``reminders.due``, the retried id draws of panels
  and conversations, ``suite.take_lease`` and ``suite.settle_item`` check then write, ``scheduler.take_lease`` and
  ``scheduler.claim`` find then take a lease or a job's run, ``alerts.put`` finds then raises). PostgreSQL's ``BEGIN`` does not serialise: take one transaction-level
  advisory lock first (``SELECT pg_advisory_xact_lock(<store key>)``), or run SERIALIZABLE and retry.
- Rows changed: SQLite's ``total_changes`` difference (it counts rows changed by triggers too);
  PostgreSQL's command status count (``UPDATE 3``). Callers only test it for zero or add it up.
- New ids: ``insert()`` reads SQLite's ``lastrowid``; PostgreSQL appends ``RETURNING id``.
- ``write()`` and ``transaction()`` share one per-process lock because SQLite has one writer
  connection per process; reads on ``Database`` use a reader connection of their own and see only
  committed rows, as a pooled backend's would. A pooled backend needs no such lock.
- Where statements run (``db.py``): on the event loop, except a read over its CPU budget, a busy
  database and ``executemany``, which go to a thread. An async driver (asyncpg) needs none of it.
- ``Database.reader()``: SQLite opens the file again with ``mode=ro``; PostgreSQL takes a connection
  of its own (``default_transaction_read_only``) and autocommits each read, so it sees each commit.
- Connection set-up: the PRAGMAs in ``Database.open`` (WAL, ``synchronous``, ``busy_timeout``,
  ``foreign_keys``) have no PostgreSQL counterpart to send.
- Schema (``migrations.py``, SQLite DDL): ``INTEGER PRIMARY KEY AUTOINCREMENT`` becomes
  ``BIGINT GENERATED BY DEFAULT AS IDENTITY PRIMARY KEY``; every ``REAL`` column (times, seconds)
  must be ``DOUBLE PRECISION`` (PostgreSQL's ``REAL`` is 4 bytes: a timestamp would lose about
  two minutes); the ``seats_touch_model`` trigger (``seats_002_touch_model``) becomes a PL/pgSQL
  function plus ``CREATE TRIGGER ... EXECUTE FUNCTION``; so do the six ``events_<table>`` triggers of
  ``web_001_events`` (each one ``INSERT INTO events (at, kind, subject, ref) VALUES (NEW.at, ...)``
  ``AFTER INSERT`` ``FOR EACH ROW``; ``events.id`` is ``INTEGER PRIMARY KEY`` without AUTOINCREMENT,
  an identity column there, which never reuses an id either); and the six of ``web_002_health_events``
  (``AFTER UPDATE`` on alerts, onboarding and scheduler_runs, ``AFTER INSERT`` on probes, onboarding
  and scheduler_runs; their ``at`` is a ``CASE``/``COALESCE`` of the row's times, portable as it is).
  Same migration names, so one list of names.
- Parameter types: a strict driver (asyncpg) cannot infer the type of a parameter that only
  appears in a select list, as in ``keys.admit``'s ``INSERT INTO key_hits (key_name, at) SELECT
  name, ? FROM gateway_keys ...``: declare it (``$1::double precision``) in the rewrite.
"""

from benchwarmers_mcp.store.db import Database, Reader, ReadOnly, Row, StoreUnavailable, Transaction

__all__ = ["Database", "ReadOnly", "Reader", "Row", "StoreUnavailable", "Transaction"]
