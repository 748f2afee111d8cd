"""The live feed: the append-only ``events`` table and the watcher that tails it.

Triggers (``migrations.web_001_events``) add one ``events`` row inside the very statement that
writes a seat, a panel, a verdict, a change-log line, an alert or a route turn, so an event
commits exactly when the thing it announces does, whichever process wrote it.

One :class:`Feed` per process tails the table on its own read-only connection
(``Database.reader()``: it never waits on a writer and never sees a row before its commit) and fans
each batch out to its subscribers, the dashboard's server-sent-event streams. It reads only while
someone listens: one range read on the key (``id > ?``) every ``interval`` seconds, which finds
nothing most of the time. A subscriber that falls behind is dropped; it comes back with its last id
and is replayed from the table. Rows older than a day are pruned, never the newest, so ids never
repeat. ``close()`` ends every subscription at once and takes no more (a stopping server).

Cost (``benchmarks/events_cost.py``): the event row adds some 15 µs (6%) to a seat's ~220 µs write
here; a tail read that finds nothing takes some 65 µs.
"""

from __future__ import annotations

import logging
import math
import time
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from dataclasses import dataclass
from typing import Any

import anyio
from anyio.streams.memory import MemoryObjectReceiveStream, MemoryObjectSendStream

from benchwarmers_mcp.store.db import Database, Reader, ReadOnly, StoreUnavailable

log = logging.getLogger("benchwarmers.events")

KEEP_SECONDS = 86_400.0  # how long a row stays for replay
PRUNE_EVERY = 600.0
BATCH = 500
REPLAY_LIMIT = 2_000  # further behind than this, a subscriber is told to reload instead
QUEUE = 256  # batches a subscriber may have waiting before it is dropped


@dataclass(frozen=True)
class Event:
    id: int
    at: float
    kind: str
    subject: str
    ref: str

    def as_dict(self) -> dict[str, Any]:
        return {"id": self.id, "at": self.at, "kind": self.kind, "subject": self.subject, "ref": self.ref}


async def after(db: Reader, last: int, limit: int = BATCH) -> list[Event]:
    rows = await db.fetchall("SELECT id, at, kind, subject, ref FROM events WHERE id > ? ORDER BY id LIMIT ?",
                             (last, limit))
    return [Event(r[0], r[1], r[2], r[3], r[4]) for r in rows]


async def head(db: Reader) -> int:
    rows = await db.fetchall("SELECT MAX(id) FROM events")
    return int(rows[0][0] or 0) if rows else 0


async def prune(db: Database, before: float) -> int:
    """Drop rows older than ``before``, never the newest row: the next id is always past every id
    ever given out, so a listener's last id stays meaningful."""
    return await db.write("DELETE FROM events WHERE at < ? AND id < (SELECT MAX(id) FROM events)", (before,))


class Subscription:
    """One listener: batches in id order, each event once, from ``cursor`` on."""

    def __init__(self, cursor: int) -> None:
        self.cursor = cursor
        self.reset = False  # set when the listener was too far behind to replay
        self.pending: list[Event] = []  # replayed from the table, delivered before anything queued
        streams = anyio.create_memory_object_stream[list[Event]](QUEUE)
        self._send: MemoryObjectSendStream[list[Event]] = streams[0]
        self._receive: MemoryObjectReceiveStream[list[Event]] = streams[1]

    def offer(self, batch: list[Event]) -> None:
        try:
            self._send.send_nowait(batch)
        except anyio.WouldBlock:
            self._send.close()  # too slow: the stream ends and the browser resumes from its last id
        except (anyio.BrokenResourceError, anyio.ClosedResourceError):
            pass

    def _fresh(self, batch: list[Event]) -> list[Event]:
        fresh = [e for e in batch if e.id > self.cursor]
        if fresh:
            self.cursor = fresh[-1].id
        return fresh

    async def next(self, timeout: float | None) -> list[Event] | None:
        """The next fresh batch; ``[]`` when ``timeout`` passed idle; None when the feed dropped it."""
        if self.pending:
            fresh, self.pending = self._fresh(self.pending), []
            if fresh:
                return fresh
        with anyio.move_on_after(math.inf if timeout is None else timeout):
            while True:
                try:
                    batch = await self._receive.receive()
                except (anyio.EndOfStream, anyio.ClosedResourceError):
                    return None
                fresh = self._fresh(batch)
                if fresh:
                    return fresh
        return []

    def close(self) -> None:
        self._send.close()
        self._receive.close()


class Feed:
    """The per-process watcher. Enter it, start ``run()`` in a task group, then ``subscribe()``."""

    def __init__(self, db: Database, interval: float = 0.25) -> None:
        self.writer = db
        self.interval = interval
        self.last = 0
        self.closed = False
        self._subs: set[Subscription] = set()
        self._reader: ReadOnly | None = None
        self._failing = False

    @property
    def listeners(self) -> int:
        return len(self._subs)

    async def __aenter__(self) -> Feed:
        self._reader = await self.writer.reader().open()
        self.last = await head(self._reader)
        return self

    async def __aexit__(self, *exc: object) -> None:
        self.close()
        if self._reader is not None:
            await self._reader.close()
            self._reader = None

    def close(self) -> None:
        """End every subscription now and take no more: a stopping server waits on no live page."""
        self.closed = True
        for sub in list(self._subs):
            sub.close()
        self._subs.clear()

    @property
    def reader(self) -> ReadOnly:
        if self._reader is None:
            raise RuntimeError("the event feed is not open")
        return self._reader

    async def head(self) -> int:
        return await head(self.reader)

    async def run(self) -> None:
        """Tail the table while anyone listens; prune it now and then. Runs until cancelled."""
        pruned = time.monotonic()
        while True:
            await anyio.sleep(self.interval)
            try:
                if self._subs:
                    await self._tail()
                self._failing = False
            except StoreUnavailable:  # a locked or closing file: try again next round, and say so once
                if not self._failing:
                    log.warning("the event feed could not read the store", exc_info=True)
                self._failing = True
            if time.monotonic() - pruned > PRUNE_EVERY:
                pruned = time.monotonic()
                await self._prune()

    async def _prune(self) -> None:
        try:
            await prune(self.writer, time.time() - KEEP_SECONDS)
        except Exception:  # the writer's own failure: the rows wait for the next round
            log.warning("the event feed could not prune old events", exc_info=True)

    async def _tail(self) -> None:
        while True:
            batch = await after(self.reader, self.last)
            if not batch:
                return
            self.last = batch[-1].id
            for sub in list(self._subs):
                sub.offer(batch)
            if len(batch) < BATCH:
                return

    @asynccontextmanager
    async def subscribe(self, since: int | None = None) -> AsyncIterator[Subscription]:
        """A listener from ``since`` (replayed from the table), else from now. Once the feed is
        closed, a listener hears nothing and ends at once."""
        now = await self.head()
        if not self._subs:
            self.last = max(self.last, now)
        sub = Subscription(now if since is None or since > now else since)
        if self.closed:
            sub.close()
        else:
            self._subs.add(sub)
        try:
            if sub.cursor < now and not self.closed:
                await self._replay(sub, now)
            yield sub
        finally:
            self._subs.discard(sub)
            sub.close()

    async def _replay(self, sub: Subscription, now: int) -> None:
        if now - sub.cursor > REPLAY_LIMIT:
            sub.reset, sub.cursor = True, now
            return
        while True:
            batch = await after(self.reader, sub.pending[-1].id if sub.pending else sub.cursor)
            sub.pending += batch
            if len(batch) < BATCH:
                return
