"""What the faces hand the engine: the app's ``Context`` (settings, the store, the model caller, the
background task group in which panels run, so a caller that hangs up never stops a panel, started
only through ``Context.spawn``, which keeps one task's failure from reaching the group, and the
live feed of the store's events) and, per request, the caller's ``Access`` (who asks, which
collections they may use).

The ground floor: this module imports nothing above ``store``, ``messages``, ``errors``,
``settings`` and ``clock``. What it needs from higher floors it names as small Protocols
(``Caller``, ``KeyRing``, ``Scheduling``, ``Onboarder``), which ``upstream``, ``scheduler`` and
``health.onboarding`` satisfy.

The per-app services beyond the store and the caller: ``clock`` (the wall clock the health jobs,
the scheduler and the alerts read; ``create_app(settings, clock=...)`` is the test seam), and the
background workers the lifespan starts, ``scheduler`` and ``onboarding`` (None until it has, and in
a context a test builds by hand).

Closed by default: every engine entry point that serves a caller takes an ``Access`` with no
default (``require_access`` refuses anything else), and an ``Access`` states its scope outright
(``None`` for every collection); nothing is allowed because something was left out.
"""

from __future__ import annotations

import logging
import random
import time
from collections.abc import AsyncGenerator, Awaitable, Callable
from dataclasses import dataclass, field
from typing import Any, Protocol

import httpx
from anyio.abc import TaskGroup

from benchwarmers_mcp.clock import Clock, SystemClock
from benchwarmers_mcp.errors import BenchError, Forbidden, ProviderError
from benchwarmers_mcp.messages import Answer, ModelRequest, StreamEvent
from benchwarmers_mcp.settings import Settings
from benchwarmers_mcp.store import Database, names
from benchwarmers_mcp.store import limits as limit_store
from benchwarmers_mcp.store.events import Feed
from benchwarmers_mcp.store.models import ModelRecord

log = logging.getLogger("benchwarmers")


@dataclass(frozen=True)
class CallInfo:
    """Who is calling, for the ledger."""

    caller: str = "gateway"
    purpose: str = ""
    key_name: str = "local"
    retries: int | None = None  # None: the pacing policy's; route mode sets 0 when a next member waits
    past_pause: bool = False  # sent even while its connection is paused (health's one confirming call)
    wait: float | None = None  # the longest the pacer may hold it (a panel's seat: Settings.seat_wait); None: its deadline


class Caller(Protocol):
    """One upstream call, whole or streamed, and whether one would have to wait
    (``upstream.caller.ModelCaller``)."""

    async def complete(self, model: ModelRecord, request: ModelRequest, *, timeout: float,
                       info: CallInfo = ...) -> Answer: ...

    def stream(self, model: ModelRecord, request: ModelRequest, *, timeout: float,
               info: CallInfo = ...) -> AsyncGenerator[StreamEvent, None]: ...

    # why a call to ``model`` that may wait at most ``wait`` s (``CallInfo.wait``) would be refused now
    async def held(self, model: ModelRecord, tokens: int, wait: float) -> ProviderError | None: ...


class KeyRing(Protocol):
    """Upstream API keys by name, never in the data folder (``upstream.keys.KeyStore``)."""

    def get(self, name: str | None) -> str | None: ...
    def has(self, name: str | None) -> bool: ...
    def source(self, name: str) -> str | None: ...
    def set(self, name: str, value: str) -> None: ...
    def delete(self, name: str) -> None: ...


class Scheduling(Protocol):
    """The scheduler as the faces use it (``scheduler.Scheduler``): its overview, a change of its
    setting, a job run now and waited for. Answers are the admin API's (``GET /api/scheduler``)."""

    async def overview(self) -> dict[str, Any]: ...

    async def configure(self, *, mode: str | None = None, off: list[str] | None = None,
                        on: list[str] | None = None, times: dict[str, str | None] | None = None) -> dict[str, Any]: ...

    async def run_now(self, name: str) -> int: ...

    async def wait(self, run_id: int) -> dict[str, Any] | None: ...


class Onboarder(Protocol):
    """The onboarding queue's worker (``health.onboarding.Onboarding``): told when items were queued."""

    def kick(self) -> None: ...


@dataclass(frozen=True)
class RouteTuning:
    """Route mode's timings and odds. The timings come from Settings unless the app is made with a
    whole tuning (``create_app(settings, route_tuning=...)``, a test's fixed ``chance``)."""

    first_token: float = 90.0
    stream_wait: float = 15.0
    turn_timeout: float = 600.0
    max_tries: int = 3
    rotation: float = 0.25
    idle_lapse: float = 24 * 3600.0
    chance: Callable[[], float] = random.random


def bare_collection(name: str) -> str:
    """``bench/core:merged``, ``core:route`` or ``core``: ``core``."""
    name = name.strip()
    name = name[len("bench/"):] if name.startswith("bench/") else name
    return name.split(":", 1)[0]


@dataclass(frozen=True)
class Access:
    """Who is asking and which collections they may use, as the guard found it for one request."""

    key_name: str  # the gateway key's name; "local" when no key is needed
    collections: tuple[str, ...] | None  # the key's scope, or None for every collection

    @classmethod
    def unscoped(cls, key_name: str = "local") -> Access:
        return cls(key_name, None)

    def allows(self, collection: str) -> bool:
        return self.collections is None or bare_collection(collection) in self.collections

    def check(self, collection: str) -> None:
        """403 when this caller may not use ``collection``; 400 when it is no name at all (a
        control character in it: every face's requested collection passes here)."""
        names.no_control("a collection name", collection)
        if not self.allows(collection):
            allowed = ", ".join(f"bench/{c}" for c in self.collections or ())
            raise Forbidden(f"gateway key {self.key_name!r} may ask only {allowed}")

    def visible(self) -> set[str] | None:
        """The collections this caller sees in a listing, or None for all."""
        return None if self.collections is None else set(self.collections)


def require_access(access: object) -> Access:
    """The caller's Access, or a refusal: a face that skipped the access check asks nothing."""
    if not isinstance(access, Access):
        raise BenchError("internal error: this request reached the engine without an access check")
    return access


@dataclass
class Context:
    settings: Settings
    db: Database
    keys: KeyRing
    client: httpx.AsyncClient
    caller: Caller
    tg: TaskGroup
    route_tuning: RouteTuning | None = None  # None: the timings in Settings
    events: Feed | None = None  # the live feed the dashboard streams (set in the app's lifespan)
    clock: Clock = field(default_factory=SystemClock)
    scheduler: Scheduling | None = None  # set by the app's lifespan
    onboarding: Onboarder | None = None  # set by the app's lifespan
    replica: str = ""  # this server's name among those on the store (store/replicas.py)

    def spawn(self, work: Callable[..., Awaitable[object]], *args: Any, name: str) -> None:
        """Start ``work(*args)`` in the app's background task group: the one way anything starts
        there (panels, route turns, shadows, suite runs, scheduled jobs, the workers). An exception
        it raises is logged once, under ``name``, and ends that task alone: it never reaches the
        group, which would cancel every panel and worker and close the store under a server that
        still answers."""
        self.tg.start_soon(_contained, work, args, name, name=name)

    async def resting(self) -> frozenset[str]:
        """Aliases resting now: after a rate limit or failures, or on a paused connection."""
        return frozenset(await limit_store.resting_aliases(self.db, time.time()))


async def _contained(work: Callable[..., Awaitable[object]], args: tuple[Any, ...], name: str) -> None:
    try:
        await work(*args)
    except Exception:  # cancellation (a BaseException) goes on to the group, as it must
        log.exception("background task %s failed; the server carries on", name)


__all__ = ["Access", "CallInfo", "Caller", "Context", "KeyRing", "Onboarder", "RouteTuning", "Scheduling",
           "bare_collection", "require_access"]
