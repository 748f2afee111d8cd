"""No GET writes or spends (issue 29.11): every GET route of the table, walked on a bench that has
something to write about (an endpoint on a fake upstream, models, a collection, verdicts that back
a suggestion, limits and a reported quota), and every page of the dashboard. Each request's
statements that write (``write``, ``record``, a transaction, or a read function handed an
``INSERT``/``UPDATE``/``DELETE``) are counted by what sent them: the request's own task or a task it
started, never the server's background jobs. The fake upstream counts every request it gets.

The refreshes that a GET used to run are POSTs now (``POST /bench/suggestions`` reviews first,
``POST /api/candidates`` reads each endpoint's listing); the test sees them write and call, so
the counters are known to count.
"""

from __future__ import annotations

import re
from collections.abc import Awaitable, Callable, Iterator
from contextvars import ContextVar
from dataclasses import dataclass, field, replace
from typing import Any

import httpx
import pytest
from starlette.types import ASGIApp, Receive, Scope, Send

from benchwarmers_mcp import routes
from benchwarmers_mcp.catalog.sync import FACTS_VERSION
from benchwarmers_mcp.store import Database
from benchwarmers_mcp.store import catalog as catalog_store
from benchwarmers_mcp.store import limits as limit_store
from benchwarmers_mcp.store import ratings as rating_store
from benchwarmers_mcp.store.limits import QuotaRecord
from benchwarmers_mcp.web.registry import discover
from tests.fakes.openai_upstream import FakeUpstream
from tests.kits.gateway import gateway_app
from tests.kits.loopback import Loopback, free_port
from tests.kits.store import in_store
from tests.ratings.kit import bench as make_bench
from tests.ratings.kit import judge

WRITES = re.compile(r"^\s*(INSERT|UPDATE|DELETE|REPLACE|UPSERT|CREATE|DROP|ALTER|TRUNCATE)\b", re.I)
_SENDER: ContextVar[str | None] = ContextVar("sender", default=None)

# What a walk asks of a route beyond its path: a value for each path parameter, a query.
EXAMPLES = {"/v1/models/{rest:path}": "/v1/models/bench/core", "/v1beta/models/{rest:path}": "/v1beta/models/bench/core",
            "/static/{rest:path}": "/static/app.js"}
QUERIES: dict[str, dict[str, str]] = {
    "/bench/record": {"collection": "bench/core"}, "/bench/ratings": {"collection": "core"},
    "/bench/suggestions": {"state": "all"}, "/api/model/facts": {"alias": "a"}, "/api/health": {"alias": "a"},
    "/api/discover": {"new": "1", "free": "1"}, "/api/suite/task": {"id": "none"}, "/api/suite/run": {"id": "1"},
    "/api/alerts": {"all": "1"}, "/api/models": {"find": "a"},
}
STREAMS = {"/api/events"}  # read to its first event, then hung up on


@dataclass
class Spy:
    """The writes each request sent (by ``"GET /path"``), and the upstream's requests."""

    writes: dict[str, list[str]] = field(default_factory=dict)
    upstream: list[str] = field(default_factory=list)

    def watch(self, db: Database) -> None:
        for name in ("write", "record"):
            setattr(db, name, self._wrapped(getattr(db, name), always=True))
        for name in ("fetchall", "fetchone", "fetchval"):
            setattr(db, name, self._wrapped(getattr(db, name), always=False))
        opened = db.transaction

        def transaction() -> Any:
            self._note("BEGIN (a write transaction)")
            return opened()
        db.transaction = transaction  # type: ignore[method-assign]

    def _note(self, sql: str) -> None:
        sender = _SENDER.get()
        if sender is not None:
            self.writes.setdefault(sender, []).append(" ".join(sql.split())[:120])

    def _wrapped(self, fn: Callable[..., Awaitable[Any]], *, always: bool) -> Callable[..., Awaitable[Any]]:
        async def run(sql: str, params: Any = ()) -> Any:
            if always or WRITES.match(sql):
                self._note(sql)
            return await fn(sql, params)
        return run


def sender_named(app: ASGIApp) -> ASGIApp:
    """``app`` with each HTTP request's task (and what it starts) named by the request's method and path."""
    async def named(scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] == "http":
            _SENDER.set(f"{scope['method']} {scope['path']}")
        await app(scope, receive, send)
    return named


def counted(app: ASGIApp, seen: list[str]) -> ASGIApp:
    async def counting(scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] == "http":
            seen.append(f"{scope['method']} {scope['path']}")
        await app(scope, receive, send)
    return counting


@pytest.fixture
def walked(settings: Any, net: Loopback) -> Iterator[tuple[httpx.Client, Spy]]:
    spy = Spy()
    fake = FakeUpstream(served=["a", "b", "x", "y", "newcomer"])
    upstream = net.serve(counted(fake.app(), spy.upstream)) + "/v1"

    async def bench(db: Database) -> None:  # core = a (weak) and b (strong); x a strong explorer: a suggestion
        await make_bench(db, ["a", "b", "x", "y"], {"core": ["a", "b"]}, base_url=upstream)
        await judge(db, "a", 2, 8, label="member")
        await judge(db, "b", 9, 1, label="member")
        await judge(db, "x", 8, 1)
        await limit_store.set_limit(db, "connection", "ep", "rpm", 100)
        await limit_store.set_limit(db, "model", "a", "tpd", 100_000)
        async with db.transaction() as tx:
            await limit_store.learn_limit(tx, "model", "b", "rpd", 50)
            await limit_store.save_quotas(tx, "ep", "a", [QuotaRecord("requests", "minute", 60, 10, None)],
                                          observed_at=1.0)
    in_store(settings, bench)
    port = free_port()
    app = gateway_app(replace(settings, port=port), upstream_transport=net.transport(httpx))
    base = net.serve(sender_named(app), port)
    spy.watch(app.state.ctx.db)
    with net.client(base_url=base, timeout=60) as client:
        yield client, spy


def get_paths() -> list[str]:
    """Every GET of the route table, as a request: each page of the registry for the page entry."""
    out: list[str] = []
    for e in routes.TABLE:
        if "GET" not in e.methods:
            continue
        if e is routes.PAGES:
            out += [p.path for p in discover()]
        else:
            out.append(EXAMPLES.get(e.path, e.path))
    return out


def test_the_walk_covers_every_get_of_the_table() -> None:
    paths = get_paths()
    for e in routes.TABLE:
        if "GET" in e.methods and e is not routes.PAGES:
            assert "{" not in e.path or e.path in EXAMPLES, f"{e.path}: the walk needs an example path"
    assert len(paths) == len(set(paths)) and len(paths) > 40


async def catch_up_state(db: Database) -> tuple[str | None, int]:
    """Whether the catalog's derived facts and first sightings were ever caught up on this store."""
    return await catalog_store.get_state(db, FACTS_VERSION), len(await catalog_store.first_seen(db))


@pytest.mark.backends
def test_no_get_writes_to_the_store_or_calls_an_upstream(walked: tuple[httpx.Client, Spy], settings: Any) -> None:
    """A store no catch-up has touched (the catalog's facts never derived, nothing noted as seen),
    so any GET that would derive or note does it here; and a bench a review would change."""
    api, spy = walked
    assert in_store(settings, catch_up_state) == (None, 0)
    answered: dict[str, int] = {}
    for path in get_paths():
        params = QUERIES.get(path, {})
        if path in STREAMS:
            with api.stream("GET", path) as reply:
                answered[path] = reply.status_code
                next(reply.iter_lines())
            continue
        reply = api.get(path, params=params)
        answered[path] = reply.status_code
        assert reply.status_code < 500, (path, reply.text[:300])
    wrote = {sender: sql for sender, sql in spy.writes.items() if sender.startswith(("GET ", "HEAD "))}
    assert wrote == {}, f"a GET wrote to the store: {wrote}"
    assert spy.upstream == [], f"a GET called the upstream: {spy.upstream}"
    assert answered["/bench/suggestions"] == 200 and answered["/api/discover"] == 200
    assert in_store(settings, catch_up_state) == (None, 0), "a GET caught the catalog up"
    assert in_store(settings, rating_store.suggestions) == [], "a GET reviewed"

    # the refreshes are POSTs: these write and call, so the counters above count
    reviewed = api.post("/bench/suggestions", json={"state": "all"})
    assert reviewed.status_code == 200, reviewed.text
    assert [s["alias"] for s in reviewed.json()["suggestions"]] == ["x"]
    assert spy.writes.get("POST /bench/suggestions"), "the review writes"
    listed = api.post("/api/candidates", json={"new": True})
    assert listed.status_code == 200, listed.text
    assert [c["served"] for c in listed.json()["candidates"]] == ["newcomer"]
    assert spy.upstream == ["GET /v1/models"]
    assert in_store(settings, catch_up_state)[0] is not None, "a POST that uses the catalog catches it up"
    after = api.get("/bench/suggestions").json()["suggestions"]
    assert [s["alias"] for s in after] == ["x"], "the GET serves what the review stored"
