"""Issue 29, item 1: one byte, one refused row, a full disk or a dropped connection never takes a
server down. Both backends store exactly what a model said (U+0000 included: PostgreSQL through
its encoding, read back decoded); a seat the store does not take is that seat's error, logged once,
and the panel's other seats are still answered, whole and streamed; nothing started in the app's
task group reaches it (``Context.spawn``); ``/health`` says 503 while the store is closed, full or
failing and 200 again once it works, with no restart.

The gateway runs on the test's loopback with the fake upstream; the official openai SDK judges the
replies. A refused row is the store's own doing (a trigger that refuses one alias's seats); the
full disk is SQLite's ``PRAGMA max_page_count`` on the writer; the dropped connection is
PostgreSQL's ``pg_terminate_backend``.
"""

from __future__ import annotations

import logging
import re
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import anyio
import anyio.lowlevel
import asyncpg
import httpx
import openai
import pytest

import benchwarmers_mcp
from benchwarmers_mcp.context import Context
from benchwarmers_mcp.settings import Settings
from benchwarmers_mcp.store import calls, health, liveness, ratings, routes, suite, verdicts
from benchwarmers_mcp.store.calls import PanelRecord, SeatRecord
from benchwarmers_mcp.store.db import Database
from benchwarmers_mcp.store.portable import TEXT_MARK
from benchwarmers_mcp.store.routes import TurnRecord
from tests.fakes.openai_upstream import FakeUpstream
from tests.kits.gateway import openai_sdk
from tests.kits.loopback import Loopback
from tests.kits.seed import seed
from tests.kits.store import in_store, store_of, url_for

BOTH = pytest.mark.backends  # the tests that run on SQLite and on PostgreSQL

# What a model may say: a NUL, the encoding's own mark at the start and inside, the mark's escapes
NUL_TEXT = "before\x00after, \x00\x00 twice"
TRICKY = [NUL_TEXT, TEXT_MARK + "starts with the mark", f"the mark {TEXT_MARK}0 inside", TEXT_MARK + "0" + TEXT_MARK + "1\x00",
          "\x00", "plain"]


def nul_reply(text: str = NUL_TEXT) -> dict[str, Any]:
    return {"role": "assistant", "content": text}


@pytest.fixture
def bench(home: Path, upstream: str) -> Path:
    """Members only (ad hoc models sit on no panel as explorers): each panel seats its own."""
    seed(home, base_url=upstream, served=["fine", "nul", "broken", "big"], ad_hoc=True,
         collections={"core": ["fine", "nul"], "refused": ["fine", "broken"], "large": ["big"]})
    return home


@pytest.fixture
def client(net: Loopback, gateway: str) -> openai.OpenAI:
    return openai_sdk(net, gateway)


def health_of(http: httpx.Client, gateway: str) -> httpx.Response:
    return http.get(gateway + "/health")


def seats_by_alias(reply: Any) -> dict[str, dict[str, Any]]:
    return {s["alias"]: s for s in reply.model_extra["bench"]["seats"]}


def streamed(client: openai.OpenAI, model: str) -> tuple[str, dict[str, Any]]:
    """The streamed reply's text and its ``bench`` object."""
    text, bench = [], None
    for chunk in client.chat.completions.create(model=model, stream=True,
                                                messages=[{"role": "user", "content": "review this"}]):
        if chunk.choices and chunk.choices[0].delta.content:
            text.append(chunk.choices[0].delta.content)
        bench = chunk.model_extra.get("bench") or bench
    assert bench is not None
    return "".join(text), bench


# ---- the store keeps exactly what was written ----------------------------------------------------

@BOTH
@pytest.mark.anyio
async def test_free_text_is_read_back_exactly_as_written(home: Path) -> None:
    """Every free text a store module reads back (a panel's prompt, system and note, a seat's answer
    and error, a route turn's error, a verdict's note, a shadow's answer, a suite answer, a probe's
    words) comes back as written: NULs, and strings that look like the encoding itself."""
    async with store_of(home) as db:
        for i, text in enumerate(TRICKY):
            panel = PanelRecord(f"p{i}", time.time(), "bench/core", "chat", "default", "all", "local",
                                text, text, [], text)
            await calls.create_panel(db, panel)
            await calls.record_seat(db, SeatRecord(f"p{i}.member1", panel.id, "member1", "member", "fine", "ok", 0.1,
                                                   answer=text, error=text))
            (seat,) = await calls.seats_of(db, panel.id)
            read = await calls.panel(db, panel.id)
            assert read is not None and (read.prompt, read.system, read.note) == (text, text, text)
            assert (seat.answer, seat.error) == (text, text)

            await routes.record_turn(db, TurnRecord(f"r{i}", 1, "error", 0.1, error=text))
            assert [t["error"] for t in await routes.turns_of(db, f"r{i}")] == [text]

            await verdicts.record(db, verdicts.Verdict(seat.call, True, text), access=_unscoped())
            latest = await verdicts.latest(db, seat.call)
            assert latest is not None and latest.note == text

            await ratings.record_shadow(db, ratings.ShadowRecord(f"r{i}.s1", f"r{i}", 1, "fine", "bench/core", "ok",
                                                                 answer=text, error=text))
            (shadow,) = await ratings.shadow_calls(db, f"r{i}")
            assert (shadow.answer, shadow.error) == (text, text)

            await suite.record_answer(db, suite.AnswerRow("fine", f"task-{i}", "ok", True, "found", text, "",
                                                          answer=text, error=text))
            (answer,) = await suite.answers(db, task=f"task-{i}")
            assert (answer["answer"], answer["error"], answer["reason"]) == (text, text, text)
            assert await suite.panel_prompt(db, seat.call) == text

            await health.add_probe(db, health.ProbeRow(time.time(), f"probed-{i}", "fake", "availability", "ready", 1,
                                                       detail=text))
            (probe,) = await health.probes(db, alias=f"probed-{i}")
            assert probe.detail == text


def _unscoped() -> Any:
    from benchwarmers_mcp.context import Access
    return Access.unscoped()


# ---- a model that says U+0000 ----------------------------------------------------------------------

@BOTH
def test_an_answer_holding_a_nul_is_answered_and_stored_whole(bench: Path, fake: FakeUpstream, client: openai.OpenAI,
                                                             http: httpx.Client, gateway: str) -> None:
    fake.script["nul"] += [nul_reply(), nul_reply()]
    reply = client.chat.completions.create(model="bench/core", messages=[{"role": "user", "content": "review"}])
    seats = seats_by_alias(reply)
    assert {a: s["status"] for a, s in seats.items()} == {"fine": "ok", "nul": "ok"}
    assert seats["nul"]["answer"] == NUL_TEXT and NUL_TEXT in (reply.choices[0].message.content or "")
    panel_id = reply.model_extra["bench"]["panel"]
    stored = in_store(bench, lambda db: calls.seats_of(db, panel_id))
    assert {s.alias: s.answer for s in stored}["nul"] == NUL_TEXT

    text, streamed_bench = streamed(client, "bench/core")  # the same, seat by seat
    assert {s["alias"]: s["status"] for s in streamed_bench["seats"]} == {"fine": "ok", "nul": "ok"}
    assert NUL_TEXT in text
    assert health_of(http, gateway).json()["ok"] is True
    again = client.chat.completions.create(model="bench/core", messages=[{"role": "user", "content": "again"}])
    assert {s["status"] for s in again.model_extra["bench"]["seats"]} == {"ok"}


# ---- a seat the store refuses ----------------------------------------------------------------------

REFUSE = {
    "sqlite": ["CREATE TRIGGER refuse_broken BEFORE INSERT ON seats WHEN NEW.alias = 'broken'"
               " BEGIN SELECT RAISE(ABORT, 'refused by the test'); END"],
    "postgresql": ["CREATE FUNCTION refuse_broken() RETURNS trigger LANGUAGE plpgsql AS $$ BEGIN"
                   " IF NEW.alias = 'broken' THEN RAISE EXCEPTION 'refused by the test'; END IF; RETURN NEW; END $$",
                   "CREATE TRIGGER refuse_broken BEFORE INSERT ON seats FOR EACH ROW EXECUTE FUNCTION refuse_broken()"],
}
UNREFUSE = {"sqlite": ["DROP TRIGGER refuse_broken"],
            "postgresql": ["DROP TRIGGER refuse_broken ON seats", "DROP FUNCTION refuse_broken()"]}


@pytest.fixture
def refusing(bench: Path, store_backend: str) -> Iterator[Path]:
    """The store refuses every seat row of the model ``broken`` (the test's databases are reused:
    the trigger goes again afterwards)."""
    async def run(db: Database, statements: list[str]) -> None:
        for sql in statements:
            await db.write(sql)

    in_store(bench, lambda db: run(db, REFUSE[store_backend]))
    try:
        yield bench
    finally:
        in_store(bench, lambda db: run(db, UNREFUSE[store_backend]))


@BOTH
def test_a_seat_the_store_refuses_is_that_seats_error_and_the_panel_goes_on(
        refusing: Path, client: openai.OpenAI, http: httpx.Client, gateway: str,
        caplog: pytest.LogCaptureFixture) -> None:
    caplog.set_level(logging.INFO)
    reply = client.chat.completions.create(model="bench/refused", messages=[{"role": "user", "content": "review"}])
    seats = seats_by_alias(reply)
    assert seats["fine"]["status"] == "ok" and seats["fine"]["answer"]
    assert seats["broken"]["status"] == "error" and seats["broken"]["answer"] == ""
    assert "could not record this seat" in seats["broken"]["error"] and "refused by the test" in seats["broken"]["error"]
    said = [r for r in caplog.records if seats["broken"]["call"] in r.getMessage()]
    assert len(said) == 1, [r.getMessage() for r in said]  # logged once, not again by the task group

    text, bench = streamed(client, "bench/refused")
    statuses = {s["alias"]: s["status"] for s in bench["seats"]}
    assert statuses == {"fine": "ok", "broken": "error"} and "could not record this seat" in text

    # the server is whole: the next panel, the store, and /health
    again = client.chat.completions.create(model="bench/core", messages=[{"role": "user", "content": "again"}])
    assert {s["status"] for s in again.model_extra["bench"]["seats"]} == {"ok"}
    assert health_of(http, gateway).status_code == 200


# ---- background work never reaches the app's task group -------------------------------------------

@pytest.mark.anyio
async def test_a_background_task_that_fails_ends_alone_and_is_logged_once(settings: Settings,
                                                                          caplog: pytest.LogCaptureFixture) -> None:
    async def broken() -> None:
        raise RuntimeError("a bug in the background")

    survived = anyio.Event()

    async def neighbour() -> None:
        await anyio.lowlevel.checkpoint()
        await anyio.lowlevel.checkpoint()
        survived.set()

    async with anyio.create_task_group() as tg:
        ctx = Context(settings, None, None, None, None, tg)  # type: ignore[arg-type]
        ctx.spawn(broken, name="the broken one")
        ctx.spawn(neighbour, name="its neighbour")
        await survived.wait()
    failed = [r for r in caplog.records if "the broken one" in r.getMessage()]
    assert len(failed) == 1 and failed[0].exc_info is not None


def test_the_app_task_group_is_reached_only_through_spawn() -> None:
    """Nothing in the package starts work on the app's task group but ``Context.spawn`` (a task that
    raised there cancelled every panel and closed the store under a server that still answered)."""
    root = Path(benchwarmers_mcp.__file__).parent
    found = []
    for path in sorted({*root.rglob("*.py"), *root.parent.parent.joinpath("gateway").rglob("*.py"),
                        *root.parent.parent.joinpath("suite").rglob("*.py"),
                        *root.parent.parent.joinpath("web").rglob("*.py")}):
        for n, line in enumerate(path.read_text(encoding="utf-8").splitlines(), 1):
            if re.search(r"\.tg\.start_soon\(", line) and path.name != "context.py":
                found.append(f"{path.name}:{n}: {line.strip()}")
    assert not found, found


# ---- /health reports the store ----------------------------------------------------------------------

@BOTH
@pytest.mark.anyio
async def test_health_says_a_closed_store_is_closed(home: Path) -> None:
    db = store_of(home)
    async with db:
        assert await liveness.problem(db, "here") is None
    assert await liveness.problem(db, "here") == "the store is closed"


def _writer_limit(net: Loopback, gateway: str, pages: int | None) -> int:
    """On the served app's SQLite writer: its page budget set to the pages it has now (``None``: back
    to the default); returns the budget."""
    conn = net.app_at(gateway).state.ctx.db._writer.conn
    count = conn.execute("PRAGMA page_count").fetchone()[0]
    return int(conn.execute(f"PRAGMA max_page_count = {count if pages is None else pages}").fetchone()[0])


@pytest.mark.parametrize("store_backend", ["sqlite"], indirect=True)
def test_a_full_disk_is_a_503_in_the_callers_shape_and_health_recovers(
        bench: Path, fake: FakeUpstream, client: openai.OpenAI, http: httpx.Client, net: Loopback,
        gateway: str) -> None:
    big = "x" * 300_000
    fake.script["big"] += [nul_reply(big), nul_reply(big)]
    client.chat.completions.create(model="bench/core", messages=[{"role": "user", "content": "warm up"}])
    _writer_limit(net, gateway, None)  # full from here: no page more

    reply = client.chat.completions.create(model="bench/large", messages=[{"role": "user", "content": "review"}])
    (seat,) = reply.model_extra["bench"]["seats"]
    assert seat["status"] == "error" and "full" in seat["error"] and seat["answer"] == ""
    sick = health_of(http, gateway)
    assert sick.status_code == 503 and sick.json()["ok"] is False and "full" in sick.json()["store"]
    assert health_of(http, gateway).status_code == 503  # a probe finds it still full

    with pytest.raises(openai.APIStatusError) as refused:  # the panel's own row cannot be written
        client.chat.completions.create(model="bench/core", messages=[{"role": "user", "content": big}])
    assert refused.value.status_code == 503
    error = refused.value.body
    assert isinstance(error, dict) and "full" in error["message"] and error["code"] == 503

    _writer_limit(net, gateway, 1_073_741_823)  # room again
    assert health_of(http, gateway).json() == {"ok": True, "version": benchwarmers_mcp.__version__}
    reply = client.chat.completions.create(model="bench/large", messages=[{"role": "user", "content": "again"}])
    assert [s["status"] for s in reply.model_extra["bench"]["seats"]] == ["ok"]


@pytest.mark.parametrize("store_backend", ["postgresql"], indirect=True)
def test_a_dropped_connection_is_a_503_at_worst_and_the_server_serves_again(
        bench: Path, client: openai.OpenAI, http: httpx.Client, gateway: str) -> None:
    url = url_for(bench)
    assert url is not None
    client.chat.completions.create(model="bench/core", messages=[{"role": "user", "content": "warm up"}])

    async def terminate() -> int:
        conn = await asyncpg.connect(url, server_settings={"application_name": "the test"})
        try:
            return len(await conn.fetch(
                "SELECT pg_terminate_backend(pid) FROM pg_stat_activity WHERE datname = current_database()"
                " AND application_name LIKE 'benchwarmers%' AND pid <> pg_backend_pid()"))
        finally:
            await conn.close()

    assert anyio.run(terminate) >= 2  # the pool's connections and the feed's reader
    statuses = []
    for _ in range(12):  # at most every pooled connection once dead, then fresh ones
        try:
            reply = client.chat.completions.create(model="bench/core", messages=[{"role": "user", "content": "hi"}])
        except openai.APIStatusError as e:
            assert e.status_code == 503 and isinstance(e.body, dict) and e.body["code"] == 503, e.body
            statuses.append(503)
        else:
            statuses.append(200)
            assert {s["status"] for s in reply.model_extra["bench"]["seats"]} <= {"ok", "error"}
    assert statuses[-3:] == [200, 200, 200], statuses
    seats = seats_by_alias(client.chat.completions.create(
        model="bench/core", messages=[{"role": "user", "content": "whole again"}]))
    assert {s["status"] for s in seats.values()} == {"ok"}
    assert health_of(http, gateway).status_code == 200
